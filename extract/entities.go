package extract

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// places are major cities and countries in both scripts. A place named in
// one script is often asked about in the other; the resolver links them,
// the extractor only has to notice them.
var places = map[string]bool{
	"Shanghai": true, "Beijing": true, "Shenzhen": true, "Guangzhou": true, "Hangzhou": true,
	"Chengdu": true, "Wuhan": true, "Nanjing": true, "Xi'an": true, "Chongqing": true,
	"Tianjin": true, "Suzhou": true, "Hong Kong": true, "Taipei": true, "Tokyo": true,
	"Osaka": true, "Kyoto": true, "Seoul": true, "Singapore": true, "Bangkok": true,
	"London": true, "Paris": true, "Berlin": true, "Munich": true, "Amsterdam": true,
	"Madrid": true, "Barcelona": true, "Rome": true, "Milan": true, "Zurich": true,
	"Vienna": true, "Moscow": true, "Dubai": true, "Istanbul": true, "Sydney": true,
	"Melbourne": true, "Toronto": true, "Vancouver": true, "Montreal": true,
	"New York": true, "San Francisco": true, "Los Angeles": true, "Seattle": true,
	"Boston": true, "Chicago": true, "Austin": true, "Denver": true, "Miami": true,
	"Washington": true, "Portland": true, "Yosemite": true, "Mumbai": true, "Delhi": true,
	"China": true, "Japan": true, "Korea": true, "France": true, "Germany": true,
	"Italy": true, "Spain": true, "Canada": true, "Australia": true, "India": true,
	"America": true, "USA": true, "UK": true, "England": true, "Mexico": true,
	"Brazil": true, "Thailand": true, "Vietnam": true, "Taiwan": true,
	"上海": true, "北京": true, "深圳": true, "广州": true, "杭州": true, "成都": true,
	"武汉": true, "南京": true, "西安": true, "重庆": true, "天津": true, "苏州": true,
	"厦门": true, "青岛": true, "大连": true, "长沙": true, "沈阳": true, "郑州": true,
	"昆明": true, "三亚": true, "拉萨": true, "香港": true, "澳门": true, "台北": true,
	"东京": true, "大阪": true, "京都": true, "首尔": true, "新加坡": true, "曼谷": true,
	"伦敦": true, "巴黎": true, "柏林": true, "纽约": true, "旧金山": true, "洛杉矶": true,
	"西雅图": true, "悉尼": true, "多伦多": true, "中国": true, "日本": true, "美国": true,
	"英国": true, "法国": true, "德国": true, "韩国": true, "加拿大": true, "澳大利亚": true,
	"云南": true, "浙江": true, "江苏": true, "广东": true, "四川": true, "新疆": true, "西藏": true,
}

// placesByRune indexes the Chinese places by first rune for the rune scan.
var placesByRune = func() map[rune][]string {
	m := map[rune][]string{}
	for p := range places {
		r, _ := utf8.DecodeRuneInString(p)
		if r >= 0x2E80 {
			m[r] = append(m[r], p)
		}
	}
	for _, l := range m { // longest first, deterministic
		sort.Slice(l, func(i, j int) bool {
			if len(l[i]) != len(l[j]) {
				return len(l[i]) > len(l[j])
			}
			return l[i] < l[j]
		})
	}
	return m
}()

// capStop are capitalised words that are not names: sentence starters,
// pronouns, greetings, and time words, which timeparse handles.
var capStop = map[string]bool{
	"The": true, "A": true, "An": true, "I": true, "I'm": true, "I've": true, "I'd": true, "I'll": true,
	"My": true, "Our": true, "We": true, "You": true, "Your": true, "He": true, "She": true,
	"It": true, "They": true, "Their": true, "His": true, "Her": true, "This": true, "That": true,
	"These": true, "Those": true, "There": true, "Here": true, "What": true, "When": true,
	"Where": true, "Why": true, "How": true, "Who": true, "Which": true, "If": true, "But": true,
	"And": true, "Or": true, "So": true, "Because": true, "Since": true, "After": true,
	"Before": true, "Then": true, "Also": true, "Just": true, "Yes": true, "No": true, "Ok": true,
	"OK": true, "Okay": true, "Hi": true, "Hello": true, "Hey": true, "Thanks": true, "Thank": true,
	"Please": true, "Sure": true, "Great": true, "Well": true, "Oh": true, "Do": true, "Does": true,
	"Did": true, "Can": true, "Could": true, "Would": true, "Should": true, "Will": true, "Is": true,
	"Are": true, "Was": true, "Were": true, "Have": true, "Has": true, "Had": true, "Let": true,
	"Today": true, "Yesterday": true, "Tomorrow": true, "Last": true, "Next": true, "In": true,
	"On": true, "At": true, "For": true, "From": true, "To": true, "With": true, "As": true,
	"Monday": true, "Tuesday": true, "Wednesday": true, "Thursday": true, "Friday": true,
	"Saturday": true, "Sunday": true, "January": true, "February": true, "March": true,
	"April": true, "May": true, "June": true, "July": true, "August": true, "September": true,
	"October": true, "November": true, "December": true, "Therefore": true, "Due": true,
	"Not": true, "Maybe": true, "Sorry": true, "Dear": true, "Good": true, "Some": true, "All": true,
	"Any": true, "Every": true, "Now": true, "Once": true, "Still": true, "Even": true, "LOL": true,
	"Done": true, "Booked": true, "Sent": true, "Added": true, "Went": true, "Got": true,
}

var honorifics = map[string]bool{"Dr": true, "Mr": true, "Mrs": true, "Ms": true, "Prof": true, "Miss": true, "Sir": true}

var orgSuffixes = map[string]bool{
	"Inc": true, "Ltd": true, "LLC": true, "Corp": true, "Corporation": true, "Company": true,
	"Co": true, "University": true, "College": true, "Institute": true, "Bank": true,
	"Group": true, "Foundation": true, "Labs": true, "Hospital": true, "School": true,
	"Technologies": true, "Studio": true, "Studios": true, "GmbH": true, "AG": true,
}

// relationNouns before a capitalised word mark it as a person: "my friend Bob".
var relationNouns = map[string]bool{
	"friend": true, "wife": true, "husband": true, "brother": true, "sister": true,
	"mom": true, "mother": true, "dad": true, "father": true, "boss": true,
	"colleague": true, "coworker": true, "son": true, "daughter": true, "boyfriend": true,
	"girlfriend": true, "partner": true, "manager": true, "teacher": true, "cousin": true,
	"uncle": true, "aunt": true, "neighbor": true, "neighbour": true, "roommate": true,
	"named": true, "called": true, "met": true, "doctor": true, "dentist": true,
}

var nameConnectors = map[string]bool{"of": true, "de": true, "van": true, "von": true, "del": true, "da": true, "and": false}

// cnSurnames are common family names that rarely start an ordinary word.
// Ambiguous ones (周 "week", 马 in 马上, 高, 白, 夏 in 夏天, 任 in 任何)
// are left out; they are still recognised after 老 or 小.
const cnSurnames = "王李张刘陈杨黄赵吴徐孙胡朱郭罗梁宋郑谢韩唐冯董萧程曹袁邓许傅沈曾彭吕苏卢蒋蔡贾丁魏薛阎余潘杜戴钟汪姜范姚谭廖邹熊陆郝孔崔康邱秦顾侯邵孟雷尹黎乔贺赖龚林"

// cnHonorSurnames follow 老 or 小 in familiar forms: 老张, 小王.
const cnHonorSurnames = cnSurnames + "周马高于何夏任方石田金文"

// cnNameStop cannot be part of a given name right after a surname: they
// are particles, pronouns and common verbs that follow names.
const cnNameStop = "说是的在和了也都去来要想把被给跟与告问叫让我你他她们它不没有吗呢吧啊呀哦个这那就还又才很已会到从对，。！？、；：,.!?;: 今昨每"

// cnNameStop2 additionally cannot be the third character of a name.
const cnNameStop2 = cnNameStop + "天年月日号周上下里外前后时先老总经医教阿叔女小姐同朋家请带做吃买看听找见约陪帮等过着得地回开打住搬喜觉认推建最刚正已可能应该知需发写读学用卖送拿换离结生病"

// cnNamePrev may stand right before a name: 和张伟, 同事李明, 告诉王芳.
const cnNamePrev = "和跟与同给叫找见问是让对被把请了带陪约帮诉说友事师哥姐弟妹：:，,、 "

// cnTitles after a surname make a person: 王老师, 李总.
var cnTitles = []string{"老师", "先生", "女士", "小姐", "总", "经理", "医生", "教授", "阿姨", "叔叔", "师傅"}

// cnCommonWords start with a surname but are ordinary words.
var cnCommonWords = map[string]bool{
	"张开": true, "黄色": true, "黄金": true, "陈述": true, "王国": true, "李子": true, "刘海": true,
	"杨树": true, "许多": true, "许可": true, "许久": true, "孙子": true, "罗列": true, "谢谢": true,
	"韩国": true, "唐朝": true, "董事": true, "程序": true, "程度": true, "曾经": true, "苏醒": true,
	"杜绝": true, "戴着": true, "戴上": true, "范围": true, "熊猫": true, "陆续": true, "孔子": true,
	"康复": true, "秦朝": true, "顾客": true, "顾问": true, "黎明": true, "宋朝": true, "林业": true,
	"钟头": true, "钟表": true, "余下": true, "潘多": true, "沈阳": true, "苏州": true, "郑州": true,
	"谢绝": true, "卢布": true, "雷雨": true, "雷声": true, "邱": true, "姜汤": true, "孟买": true,
}

// cnPlaceSuffix and cnOrgSuffix end a place or organisation name; the name
// runs back from the suffix until a function word.
var (
	cnPlaceSuffix = []string{"市", "省", "区", "县"}
	cnOrgSuffix   = []string{"公司", "大学", "银行", "集团", "学院", "医院", "研究所", "研究院", "中学", "小学", "工作室"}
)

// cnNotPlace are ordinary words ending in a place suffix.
var cnNotPlace = map[string]bool{
	"城市": true, "超市": true, "都市": true, "夜市": true, "股市": true, "楼市": true, "上市": true,
	"门市": true, "地区": true, "小区": true, "社区": true, "市区": true, "郊区": true, "景区": true,
	"园区": true, "校区": true, "山区": true, "灾区": true, "误区": true, "专区": true, "分区": true,
	"片区": true, "街区": true, "节省": true, "反省": true, "外省": true, "本省": true, "全省": true,
	"本市": true, "全市": true, "各省": true, "各区": true, "城区": true, "老城区": true,
}

// cnBoundary stops the backwards scan from a suffix: particles, pronouns,
// verbs of motion, and other suffixes.
const cnBoundary = "在去到从的了我你他她们它是和与跟住搬回来往进加入于向为把被给让这那个一些也都就还又再市省区县，。！？、；：,.!?;: "

// span is an entity candidate with its byte range in the sentence.
type span struct {
	start, end int
	name, kind string
}

// entityFinder carries the per-chunk names that count as known.
type entityFinder struct {
	known map[string]string // name -> kind
}

// find returns the entities of sentence s, deduplicated, in order of
// appearance.
func (f *entityFinder) find(s string, out []Entity) []Entity {
	var cands []span
	cands = f.findLatin(s, cands)
	cands = findHandlesTitles(s, cands)
	cands = findHan(s, cands)
	for name, kind := range f.known {
		if i := strings.Index(s, name); i >= 0 {
			cands = append(cands, span{i, i + len(name), name, kind})
		}
	}
	cands = dropInsideMarkers(s, cands)
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].start != cands[j].start {
			return cands[i].start < cands[j].start
		}
		if cands[i].end != cands[j].end {
			return cands[i].end > cands[j].end
		}
		return cands[i].name < cands[j].name
	})
	end := -1
	for _, c := range cands {
		if c.start < end {
			continue
		}
		end = c.end
		if k, ok := f.known[c.name]; ok {
			c.kind = k
		}
		out = addEntity(out, Entity{Name: c.name, Kind: c.kind})
	}
	return out
}

// redactionPrefix opens the placeholder the defense gate leaves where it
// removed a secret ("[REDACTED:<label>]"; see defense.RedactionMarker).
const redactionPrefix = "[REDACTED:"

// dropInsideMarkers removes candidates that touch a redaction placeholder.
// Without it "REDACTED" reads as a capitalised name, and every fact that
// had a secret removed would be linked to every other one through it.
func dropInsideMarkers(s string, cands []span) []span {
	if !strings.Contains(s, redactionPrefix) {
		return cands
	}
	var marks [][2]int
	for off := 0; ; {
		i := strings.Index(s[off:], redactionPrefix)
		if i < 0 {
			break
		}
		start := off + i
		end := len(s)
		if j := strings.IndexByte(s[start:], ']'); j >= 0 {
			end = start + j + 1
		}
		marks = append(marks, [2]int{start, end})
		off = end
	}
	out := cands[:0]
	for _, c := range cands {
		inside := false
		for _, m := range marks {
			if c.start < m[1] && m[0] < c.end {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, c)
		}
	}
	return out
}

func addEntity(out []Entity, e Entity) []Entity {
	for _, x := range out {
		if x.Name == e.Name {
			return out
		}
	}
	return append(out, e)
}

type word struct {
	s          string
	start, end int
}

func latinWords(s string) []word {
	var ws []word
	for i := 0; i < len(s); {
		if !isASCIILetter(s[i]) && !(s[i] >= '0' && s[i] <= '9') {
			i++
			continue
		}
		j := i
		for j < len(s) {
			c := s[j]
			if isASCIILetter(c) || c >= '0' && c <= '9' {
				j++
				continue
			}
			// Keep O'Brien, Jean-Luc and Xi'an in one word.
			if (c == '\'' || c == '-') && j+1 < len(s) && isASCIILetter(s[j+1]) {
				j++
				continue
			}
			break
		}
		// A possessive is not part of the word: Emma's → Emma.
		next := j
		if j-i > 2 && s[j-1] == 's' && s[j-2] == '\'' {
			j -= 2
		}
		ws = append(ws, word{s[i:j], i, j})
		i = next
	}
	return ws
}

func capitalised(w string) bool { return w != "" && w[0] >= 'A' && w[0] <= 'Z' }

// findLatin finds capitalised names: runs of capitalised words joined by
// single spaces (and "of", "de", ...). A lone capitalised word at sentence
// start is skipped unless known, since every sentence starts with one.
func (f *entityFinder) findLatin(s string, out []span) []span {
	ws := latinWords(s)
	first := true // the next word is the sentence's first
	for i := 0; i < len(ws); i++ {
		atStart := first
		first = false
		w := ws[i].s
		if !capitalised(w) {
			continue
		}
		// A name may be only part of a longer run; take the run first.
		j := i
		for j+1 < len(ws) {
			gap := s[ws[j].end:ws[j+1].start]
			next := ws[j+1].s
			if capitalised(next) && !capStop[next] && (gap == " " || honorifics[ws[j].s] && gap == ". ") {
				j++
				continue
			}
			if nameConnectors[next] && gap == " " && j+2 < len(ws) && capitalised(ws[j+2].s) && s[ws[j+1].end:ws[j+2].start] == " " {
				j += 2
				continue
			}
			break
		}
		lo := i
		for lo <= j && capStop[ws[lo].s] {
			lo++
		}
		if lo > i {
			atStart = false
			if lo > j {
				i = j
				continue
			}
		}
		for h := lo + 1; h < j; h++ {
			if honorifics[ws[h].s] {
				lo, atStart = h, false // "Ask Dr. Chen": the name starts at the title
				break
			}
		}
		name := s[ws[lo].start:ws[j].end]
		_, known := f.known[name]
		if atStart && lo == j && !known && !places[name] {
			i = j
			continue
		}
		if lo == j && len(name) == 1 {
			i = j
			continue
		}
		kind := KindOther
		switch {
		case places[name]:
			kind = KindPlace
		case orgSuffixes[ws[j].s] || ws[lo].s == "University":
			kind = KindOrg
		case honorifics[ws[lo].s] && lo < j:
			kind = KindPerson
		case lo > 0 && relationNouns[strings.ToLower(ws[lo-1].s)]:
			kind = KindPerson
		}
		out = append(out, span{ws[lo].start, ws[j].end, name, kind})
		i = j
	}
	return out
}

// findHandlesTitles finds @handles and quoted titles: "…", “…”, 《…》.
func findHandlesTitles(s string, out []span) []span {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '@':
			if i > 0 && (isASCIILetter(s[i-1]) || s[i-1] >= '0' && s[i-1] <= '9') {
				continue // an e-mail address
			}
			j := i + 1
			for j < len(s) && (isASCIILetter(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '.' || s[j] == '-') {
				j++
			}
			for j > i+1 && (s[j-1] == '.' || s[j-1] == '-') {
				j--
			}
			if j > i+1 {
				out = append(out, span{i, j, s[i:j], KindHandle})
				i = j - 1
			}
		case '"':
			if k := strings.IndexByte(s[i+1:], '"'); k > 0 {
				out = appendTitle(out, s, i, i+1, i+1+k, i+2+k)
				i += 1 + k
			}
		}
	}
	for _, q := range [][2]string{{"“", "”"}, {"《", "》"}} {
		for off := 0; ; {
			a := strings.Index(s[off:], q[0])
			if a < 0 {
				break
			}
			a += off
			b := strings.Index(s[a+len(q[0]):], q[1])
			if b < 0 {
				break
			}
			b += a + len(q[0])
			out = appendTitle(out, s, a, a+len(q[0]), b, b+len(q[1]))
			off = b + len(q[1])
		}
	}
	return out
}

// appendTitle keeps short quotations only: a long one is speech, not a
// title; and a quotation in Latin script only when it is written as a title
// (see titleCased), not a phrase quoted as an example.
func appendTitle(out []span, s string, start, innerStart, innerEnd, end int) []span {
	inner := strings.TrimSpace(s[innerStart:innerEnd])
	if n := utf8.RuneCountInString(inner); n == 0 || n > 60 || !titleCased(inner) {
		return out
	}
	return append(out, span{start, end, inner, KindTitle})
}

// titleMinor are the words English title case leaves in lower case.
var titleMinor = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "nor": true, "but": true,
	"of": true, "in": true, "on": true, "at": true, "to": true, "for": true, "by": true,
	"with": true, "from": true, "as": true, "vs": true, "de": true, "la": true, "von": true,
}

// titleCased: a Latin-script quotation names something when it is written
// in title case, its first word and every other word but the minor ones
// capitalised, and does not end in a clause's comma or colon ("Hi Bob,").
// Text without Latin words (《三体》) passes.
func titleCased(q string) bool {
	ws := latinWords(q)
	if len(ws) == 0 {
		return true
	}
	if strings.ContainsAny(q[len(q)-1:], ",;:") {
		return false
	}
	for i, w := range ws {
		if w.s[0] >= '0' && w.s[0] <= '9' {
			continue
		}
		if !capitalised(w.s) && (i == 0 || !titleMinor[w.s]) {
			return false
		}
	}
	return true
}

// findHan finds Chinese places, organisations and person names.
func findHan(s string, out []span) []span {
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		if r < 0x2E80 || !unicode.Is(unicode.Han, r) {
			i += sz
			continue
		}
		for _, p := range placesByRune[r] {
			if strings.HasPrefix(s[i:], p) {
				out = append(out, span{i, i + len(p), p, KindPlace})
				break
			}
		}
		for _, suf := range cnPlaceSuffix {
			if strings.HasPrefix(s[i:], suf) {
				if st := backScan(s, i, 4); st < i {
					core, name := s[st:i], s[st:i+len(suf)]
					switch {
					case places[core]:
						out = append(out, span{st, i + len(suf), core, KindPlace})
					case !cnNotPlace[name] && !cnNotPlace[s[max(st, i-len("城")):i+len(suf)]]:
						out = append(out, span{st, i + len(suf), name, KindPlace})
					}
				}
			}
		}
		for _, suf := range cnOrgSuffix {
			if strings.HasPrefix(s[i:], suf) {
				if st := backScan(s, i, 6); utf8.RuneCountInString(s[st:i]) >= 2 {
					out = append(out, span{st, i + len(suf), s[st : i+len(suf)], KindOrg})
				}
			}
		}
		if (r == '老' || r == '小') && i+sz < len(s) {
			r2, sz2 := utf8.DecodeRuneInString(s[i+sz:])
			if strings.ContainsRune(cnHonorSurnames, r2) {
				r3, _ := utf8.DecodeRuneInString(s[i+sz+sz2:])
				if !unicode.Is(unicode.Han, r3) || strings.ContainsRune(cnNameStop, r3) || strings.ContainsRune(cnNameStop2, r3) {
					out = append(out, span{i, i + sz + sz2, s[i : i+sz+sz2], KindPerson})
				}
			}
		}
		if n := hanNickname(s, i, r, sz); n > 0 {
			out = append(out, span{i, i + n, s[i : i+n], KindPerson})
		}
		if strings.ContainsRune(cnSurnames, r) && hanNamePrevOK(s, i) {
			if n := hanName(s, i, sz); n > 0 {
				out = append(out, span{i, i + n, s[i : i+n], KindPerson})
			}
		}
		i += sz
	}
	return out
}

// backScan walks back from byte i over at most n Han runes that are not
// boundaries and returns the start.
func backScan(s string, i, n int) int {
	st := i
	for k := 0; k < n && st > 0; k++ {
		r, sz := utf8.DecodeLastRuneInString(s[:st])
		if !unicode.Is(unicode.Han, r) || strings.ContainsRune(cnBoundary, r) {
			break
		}
		st -= sz
	}
	return st
}

func hanNamePrevOK(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return !unicode.Is(unicode.Han, r) || strings.ContainsRune(cnNamePrev, r)
}

// hanName returns the byte length of the name starting with the surname at
// i, or 0: surname + title (王老师), or surname + one or two given-name
// characters.
func hanName(s string, i, sz int) int {
	rest := s[i+sz:]
	for _, t := range cnTitles {
		if strings.HasPrefix(rest, t) {
			return sz + len(t)
		}
	}
	r1, sz1 := utf8.DecodeRuneInString(rest)
	if !unicode.Is(unicode.Han, r1) || strings.ContainsRune(cnNameStop, r1) {
		return 0
	}
	if cnCommonWords[s[i:i+sz+sz1]] || places[s[i:i+sz+sz1]] {
		return 0
	}
	n := sz + sz1
	r2, sz2 := utf8.DecodeRuneInString(rest[sz1:])
	if unicode.Is(unicode.Han, r2) && !strings.ContainsRune(cnNameStop2, r2) {
		n += sz2
	}
	return n
}

// cnNotNickname are words of the nickname shapes that are not names:
// 阿姨 (aunt), reduplicated adverbs and kinship terms (天天, 妈妈), and
// X姐/X哥 kinship or role words (表姐, 空姐, 大哥).
var cnNotNickname = map[string]bool{
	"阿姨": true, "阿里": true, "阿拉": true, "阿婆": true, "阿公": true, "阿伯": true, "阿妈": true, "阿爸": true,
	"天天": true, "常常": true, "慢慢": true, "刚刚": true, "好好": true, "渐渐": true, "谢谢": true, "哈哈": true,
	"妈妈": true, "爸爸": true, "哥哥": true, "姐姐": true, "弟弟": true, "妹妹": true, "宝宝": true, "奶奶": true,
	"爷爷": true, "叔叔": true, "婆婆": true, "公公": true, "舅舅": true, "姥姥": true, "嘻嘻": true, "嗯嗯": true,
	"偷偷": true, "悄悄": true, "轻轻": true, "默默": true, "早早": true, "久久": true, "人人": true, "家家": true,
	"个个": true, "年年": true, "月月": true, "处处": true, "时时": true, "试试": true, "看看": true, "想想": true,
	"说说": true, "走走": true, "聊聊": true, "等等": true, "多多": true, "点点": true, "星星": true, "往往": true,
	"表姐": true, "堂姐": true, "大姐": true, "小姐": true, "空姐": true, "师姐": true, "学姐": true, "老姐": true,
	"表哥": true, "堂哥": true, "大哥": true, "师哥": true, "学哥": true, "老哥": true, "帅哥": true, "二哥": true,
	"二姐": true, "三姐": true, "三哥": true,
}

// hanNickname returns the byte length of a Chinese nickname starting at
// byte i (rune r of size sz), or 0. Friends and family call 刘洋 阿洋,
// 王芳 芳芳 and 黄敏 敏姐: 阿 + a given-name character, a doubled given-name
// character, or a given-name character + 姐/哥. The nickname must stand
// where a name can (after punctuation or a function word) and end where a
// name can (before punctuation, a particle or a common verb), so that
// words of the same shape inside longer words are not taken.
func hanNickname(s string, i int, r rune, sz int) int {
	if !hanNamePrevOK(s, i) {
		return 0
	}
	r2, sz2 := utf8.DecodeRuneInString(s[i+sz:])
	if !unicode.Is(unicode.Han, r2) || strings.ContainsRune(cnNameStop, r2) {
		return 0
	}
	var n int
	switch {
	case r == '阿':
		n = sz + sz2
	case r2 == r && !strings.ContainsRune(cnNameStop2, r):
		n = sz + sz2
	case (r2 == '姐' || r2 == '哥') && !strings.ContainsRune(cnNameStop2, r):
		n = sz + sz2
	default:
		return 0
	}
	if cnNotNickname[s[i:i+n]] {
		return 0
	}
	next, _ := utf8.DecodeRuneInString(s[i+n:])
	if i+n < len(s) && unicode.Is(unicode.Han, next) && !strings.ContainsRune(cnNameStop2, next) && !strings.ContainsRune(cnNicknameNext, next) {
		return 0
	}
	return n
}

// cnNicknameNext may follow a nickname besides cnNameStop2: adverbs,
// prepositions and time words that commonly follow a subject.
const cnNicknameNext = "也都还又才已经就把被给跟对比今昨明前上下"
