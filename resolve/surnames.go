package resolve

import "strings"

// commonSurnames are about 200 of the most frequent single-character Chinese
// surnames, which cover the great majority of people. A name must start
// with one of these (or a compound surname) to be split into surname and
// given name; rarer surnames still match by full name and pinyin.
const commonSurnames = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫阎段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩佘池查麻苑迟邝区朴盖"

// surnameReadings are surnames whose surname reading differs from the
// character's most common reading, which is what go-pinyin returns.
var surnameReadings = map[rune]string{
	'单': "shan", '解': "xie", '曾': "zeng", '区': "ou", '仇': "qiu", '朴': "piao",
	'查': "zha", '乐': "yue", '翟': "zhai", '缪': "miao", '覃': "qin", '盖': "ge",
	'种': "chong", '秘': "bi", '繁': "po", '召': "shao", '员': "yun",
}

// compoundSurnames maps two-character surnames to their pinyin. Without them
// 欧阳娜娜 would split as 欧 + 阳娜娜.
var compoundSurnames = map[string]string{
	"欧阳": "ouyang", "司马": "sima", "上官": "shangguan", "诸葛": "zhuge",
	"东方": "dongfang", "皇甫": "huangfu", "尉迟": "yuchi", "公孙": "gongsun",
	"慕容": "murong", "长孙": "zhangsun", "宇文": "yuwen", "司徒": "situ",
	"夏侯": "xiahou", "轩辕": "xuanyuan", "令狐": "linghu", "钟离": "zhongli",
	"澹台": "tantai", "南宫": "nangong", "独孤": "dugu", "端木": "duanmu",
	"西门": "ximen", "呼延": "huyan", "东郭": "dongguo", "闻人": "wenren",
	"申屠": "shentu", "太史": "taishi", "司空": "sikong", "万俟": "moqi",
}

// notFamiliarSurname lists surnames that, after 小, are far more often a
// given-name nickname (小华, 小龙, 小文) than "young Hua/Long/Wen".
var notFamiliarSurname = map[string]bool{
	"华": true, "龙": true, "文": true, "安": true, "宁": true, "阳": true,
	"成": true, "和": true, "兰": true, "梅": true, "凌": true, "蓝": true,
	"游": true, "米": true, "雷": true, "柏": true, "时": true, "晏": true,
}

// surnames maps each common single surname to its pinyin.
var surnames = func() map[rune]string {
	m := make(map[rune]string, len(commonSurnames)/3)
	for _, r := range commonSurnames {
		if p, ok := surnameReadings[r]; ok {
			m[r] = p
			continue
		}
		m[r] = strings.Join(toPinyin(string(r)), "")
	}
	return m
}()

// pinyinSurnames is the set of surname spellings in pinyin, used to notice
// that "Zhang Wei" may be written surname first.
var pinyinSurnames = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range surnames {
		m[p] = true
	}
	for _, p := range compoundSurnames {
		m[p] = true
	}
	return m
}()

// nicknames maps common English short forms to the full given name. Only
// unambiguous pairs are listed: "Alex" (Alexander or Alexandra) and "Pat"
// (Patrick or Patricia) are left out on purpose.
var nicknames = map[string]string{
	"bob": "robert", "bobby": "robert", "rob": "robert", "robbie": "robert", "bert": "robert",
	"bill": "william", "billy": "william", "will": "william", "willy": "william", "liam": "william",
	"jim": "james", "jimmy": "james", "jamie": "james",
	"mike": "michael", "mikey": "michael", "mick": "michael",
	"dave": "david", "davy": "david",
	"tom": "thomas", "tommy": "thomas",
	"liz": "elizabeth", "lizzie": "elizabeth", "beth": "elizabeth", "betty": "elizabeth", "eliza": "elizabeth",
	"kate": "katherine", "katie": "katherine", "kathy": "katherine", "cathy": "katherine", "catherine": "katherine",
	"chris": "christopher", "dan": "daniel", "danny": "daniel",
	"joe": "joseph", "joey": "joseph", "tony": "anthony", "nick": "nicholas",
	"matt": "matthew", "sam": "samuel", "ben": "benjamin", "benny": "benjamin",
	"steve": "steven", "stephen": "steven", "andy": "andrew", "drew": "andrew",
	"ed": "edward", "eddie": "edward", "ted": "edward", "rick": "richard", "dick": "richard", "rich": "richard",
	"jen": "jennifer", "jenny": "jennifer", "sue": "susan", "susie": "susan",
	"maggie": "margaret", "peggy": "margaret", "meg": "margaret",
	"charlie": "charles", "chuck": "charles", "greg": "gregory", "jeff": "jeffrey",
	"ken": "kenneth", "kenny": "kenneth", "larry": "lawrence", "ron": "ronald", "ronnie": "ronald",
	"tim": "timothy", "timmy": "timothy", "jon": "jonathan", "nate": "nathan",
	"becky": "rebecca", "vicky": "victoria", "abby": "abigail", "mandy": "amanda",
}
