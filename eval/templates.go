package eval

import "time"

// The template tables below are the vocabulary of the tuning part
// (PartTuning); templates_heldout.go holds the held-out part's. Pools are kept
// free of values that are substrings of one another (and of the filler), so
// that "the gold answer appears in the context" means the evidence, or a
// paraphrase of it, was actually recalled. TestGoldOnlyInEvidence guards it.

// factTemplate plants one answerable fact. {v} is the value, {p} another
// person (for hard negatives), {a} an absent term.
type factTemplate struct {
	pool   []string // values; abstention: distractor values
	say    []string // the evidence turn (assistant turn for SSA)
	req    []string // SSA: the user turn that prompts the evidence
	neg    []string // hard negative about someone else; neg[i] mirrors say[i] (update[i] for knowledge updates)
	negReq []string // SSA: the user turn that prompts the hard negative
	update []string // knowledge-update: the turn that supersedes say
	ask    []string // the question, worded differently from say
	absent []string // abstention: key terms that never occur in any turn
}

var otherPeople = []string{"Priya", "Dave", "Karen", "Luis", "Mei", "Jonas", "Fatima", "Greg", "Nadia", "Owen"}

var userNames = []string{"Alice", "Bram", "Chloe", "Dmitri", "Esme", "Farid", "Grace", "Hugo", "Isla", "Jamal", "Keiko", "Liam", "Maya", "Niko", "Olivia", "Pablo"}

var singleSessionUser = []factTemplate{{
	pool: []string{"Biscuit", "Pepper", "Mochi", "Juniper", "Waffles", "Noodle", "Pickles", "Clementine"},
	say: []string{"We finally brought home a rescue dog last week, we're calling her {v}.",
		"The shelter puppy has a name now: {v}. The kids picked it."},
	neg: []string{"{p} from work brought home a rescue cat last week and is calling it {v}.",
		"My neighbour {p}'s shelter puppy is called {v}, her kids picked it."},
	ask: []string{"What name did we give the dog we adopted?", "What is my rescue dog called?"},
}, {
	pool: []string{"pediatric nurse", "patent lawyer", "sous chef", "marine biologist", "air traffic controller", "landscape architect", "data journalist"},
	say: []string{"Big news in the family, my sister just started working as a {v}.",
		"My sister landed a job as a {v}, she starts on Monday."},
	neg: []string{"Big news for {p}: her sister just started working as a {v}.",
		"{p}'s sister landed a job as a {v}, she starts next month."},
	ask: []string{"What is my sister's new occupation?", "What line of work did my sister just get into?"},
}, {
	pool: []string{"Subaru Outback", "Mazda CX-5", "Honda Civic", "Toyota Prius", "Volvo XC40", "Kia Niro", "Skoda Octavia"},
	say: []string{"I traded in the old hatchback and ended up buying a {v}.",
		"Signed the papers today, I'm now the owner of a {v}."},
	neg: []string{"{p} traded in her hatchback last year and ended up buying a {v}.",
		"{p} signed the papers on a {v} today, she's now a proud owner."},
	ask: []string{"Which car did I end up getting after the trade-in?", "What vehicle did I purchase?"},
}, {
	pool: []string{"Maplewood Elementary", "Riverside Academy", "Oakridge Montessori", "Hillcrest Primary", "Lakeview School"},
	say: []string{"My daughter starts at {v} in the fall, we got the acceptance letter today.",
		"We enrolled our daughter at {v}, the teachers seemed lovely."},
	neg: []string{"{p}'s son starts at {v} in the fall, they got the acceptance letter.",
		"{p} enrolled her twins at {v}, she says the teachers are lovely."},
	ask: []string{"Which school is my daughter going to attend?", "Where did we enrol our daughter?"},
}, {
	pool: []string{"bowling", "curling", "ultimate frisbee", "volleyball", "dodgeball", "table tennis"},
	say: []string{"I joined a {v} league on Thursday nights, first match went badly.",
		"Signed up for the office {v} league, wish me luck."},
	neg: []string{"{p} joined a {v} league on Thursday nights too.",
		"{p} signed up for the office {v} league and quit after a week."},
	ask: []string{"What kind of league did I sign up for?", "Which team sport did I start playing in a league?"},
}}

// In singleSessionAssistant, neg[i] and negReq[i] mirror say[i], so that a
// hard negative reuses the wording of the evidence it competes with.
var singleSessionAssistant = []factTemplate{{
	pool: []string{"The Remains of the Day", "Station Eleven", "Project Hail Mary", "The Night Circus", "A Gentleman in Moscow", "Klara and the Sun", "The Overstory"},
	req: []string{"Can you suggest a novel for my long flight next week?",
		"I need something to read on the plane, any ideas?"},
	say: []string{"You might enjoy {v}; it's gripping but easy to pick up and put down.",
		"I'd go with {v}. It makes a ten-hour flight disappear."},
	negReq: []string{"My friend {p} wants a pick for her book club.",
		"{p} asked me for a book to give her dad."},
	neg: []string{"Her book club might enjoy {v}; it's gripping and sparks a good discussion.",
		"I'd go with {v} for her dad. It makes a long evening disappear."},
	ask: []string{"What novel did you recommend for my flight?", "Which book did you point me to for reading on the plane?"},
}, {
	pool: []string{"lemon juice", "white vinegar", "plain yogurt", "cream of tartar", "apple cider vinegar"},
	req: []string{"I'm out of buttermilk for the pancakes, what can I use instead?",
		"The recipe calls for buttermilk and I have none. Any substitute?"},
	say: []string{"Stir a spoonful of {v} into regular milk and let it sit ten minutes; it works as a buttermilk stand-in.",
		"Use milk with a bit of {v} mixed in, it curdles slightly and behaves like buttermilk."},
	negReq: []string{"{p} is baking scones and ran out of cream.",
		"{p} wants to make a dairy-free dressing."},
	neg: []string{"For the scones, stir a spoonful of {v} into regular milk; it works as a cream stand-in.",
		"Use oil with a bit of {v} mixed in, it behaves like a creamy dressing."},
	ask: []string{"What did you tell me to add to milk as a replacement for buttermilk?", "Which ingredient did you suggest to fake buttermilk?"},
}, {
	pool: []string{"cat-cow", "child's pose", "pigeon pose", "figure-four", "cobra"},
	req: []string{"My lower back is sore after sitting all day, any stretch you'd recommend?",
		"Desk job is wrecking my lower back. What should I do in the evenings?"},
	say: []string{"Try the {v} stretch and hold it for thirty seconds on each side.",
		"A few rounds of {v} before bed should loosen up your lower back."},
	negReq: []string{"{p} hurt her shoulder lifting boxes.",
		"{p} gets stiff hips from cycling."},
	neg: []string{"For her shoulder, try the {v} stretch and hold it for twenty seconds.",
		"A few rounds of {v} before cycling should loosen up her hips."},
	ask: []string{"Which stretch did you suggest for my aching back?", "What exercise did you recommend for the back pain from sitting?"},
}, {
	pool: []string{"Pinot Noir", "Chardonnay", "Barbera", "Sauvignon Blanc", "Nebbiolo", "Gruner Veltliner"},
	req: []string{"What should I pour with the mushroom risotto on Friday?",
		"I'm cooking mushroom risotto for guests, which wine goes with it?"},
	say: []string{"A glass of {v} would pair nicely with the earthy mushrooms.",
		"Go for {v}; it won't overpower the risotto."},
	negReq: []string{"{p} is grilling steaks tonight, what wine should she bring?",
		"{p} is serving spicy curry to her in-laws."},
	neg: []string{"With steak, a glass of {v} would pair nicely.",
		"Go for a chilled {v}; it won't overpower the curry."},
	ask: []string{"Which wine did you say would go well with my risotto?", "What bottle did you pair with the mushroom dish I was making?"},
}, {
	pool: []string{"snake plant", "ZZ plant", "cast iron plant", "pothos", "peace lily"},
	req: []string{"My apartment is pretty dark, what houseplant could survive?",
		"I keep killing plants in my north-facing flat. Anything hardy?"},
	say: []string{"A {v} is very forgiving in low light; water it every couple of weeks.",
		"Get a {v}. It tolerates shade and neglect better than almost anything."},
	negReq: []string{"{p} wants a plant for her sunny balcony.",
		"{p} needs a plant that is safe around cats."},
	neg: []string{"A {v} is forgiving in full sun if she waters it every couple of days.",
		"Get a {v}; it tolerates curious cats better than almost anything."},
	ask: []string{"Which plant did you recommend for my dim apartment?", "What low-light plant did you tell me to buy?"},
}}

var singleSessionPreference = []factTemplate{{
	pool: []string{"vegetarian", "vegan", "pescatarian"},
	say: []string{"Just so you know, I've been {v} for years, so skip anything with meat.",
		"Reminder for future recipes: I'm {v}."},
	neg: []string{"{p} has been {v} for years, so our team lunches skip anything with meat.",
		"Reminder for the potluck: {p} is {v}, so plan the recipes around her."},
	ask: []string{"Can you suggest something I could cook for dinner this week?", "What should I make for a dinner party on Friday?"},
}, {
	pool: []string{"decaf", "matcha", "chai latte", "cortado", "cold brew"},
	say: []string{"I only drink {v} these days, anything else makes me jittery.",
		"My go-to order is always {v}, no exceptions."},
	neg: []string{"{p} only drinks {v} these days; anything else makes her jittery.",
		"{p}'s go-to order is always {v}, she tried to convert me."},
	ask: []string{"What should I order at the café tomorrow morning?", "Any idea what drink I'd want if you were buying me one?"},
}, {
	pool: []string{"drum and bass", "hip hop", "synthwave", "bluegrass", "power metal"},
	say: []string{"Nothing gets me through a run like {v}.",
		"When I work out I put on {v}, it keeps my pace up."},
	neg: []string{"Nothing gets {p} through a run like {v}, she says.",
		"When {p} works out she puts on {v}, it keeps her pace up."},
	ask: []string{"Could you put together a playlist for my workout?", "What music would keep me motivated on a long jog?"},
}, {
	pool: []string{"bed and breakfast", "boutique hotel", "cabin rental", "hostel"},
	say: []string{"When I travel I'd much rather stay in a {v} than a big chain hotel.",
		"I always look for a {v} first when I book trips."},
	neg: []string{"{p} would much rather stay in a {v} than a chain hotel.",
		"{p} always looks for a {v} first when she books trips."},
	ask: []string{"Where should I stay on my next weekend getaway?", "What kind of lodging should you look for when planning my vacation?"},
}, {
	pool: []string{"film noir", "spaghetti western", "screwball comedy", "samurai", "kaiju"},
	say: []string{"Honestly, I'm a sucker for {v} movies, the older the better.",
		"Give me a {v} film over a blockbuster any day."},
	neg: []string{"{p} is a sucker for {v} movies, the older the better.",
		"{p} would take a {v} film over a blockbuster any day."},
	ask: []string{"Any film suggestions for a quiet night in?", "What should I watch on movie night?"},
}}

var multiSession = []factTemplate{{
	pool: []string{"Lisbon", "Denver", "Osaka", "Toronto", "Nairobi", "Krakow", "Austin", "Seoul", "Dublin", "Porto"},
	say: []string{"Just got home after the work trip to {v}, so tired.",
		"The client visit in {v} went fine, mostly meetings.",
		"Flew out to {v} for work again, the hotel was decent."},
	neg: []string{"{p} just got home after a work trip to {v}.",
		"{p} had a client visit in {v}, mostly meetings.",
		"{p} flew out to {v} for work, the hotel was awful."},
	ask: []string{"Which cities have I travelled to for my job?", "List the places I visited on business trips."},
}, {
	pool: []string{"Middlemarch", "Circe", "Beloved", "Rebecca", "The Goldfinch", "Pachinko", "Shogun", "Piranesi"},
	say: []string{"Finished {v} last night, couldn't put it down.",
		"Just closed the last page of {v}. What an ending.",
		"Another one done: {v}. I'm on a roll."},
	neg: []string{"{p} finished {v} last night and lent me her copy.",
		"{p} hated the ending of {v}, we argued for an hour.",
		"Another one for the pile: {p} gave me {v}, haven't started it."},
	ask: []string{"Which books have I completed recently?", "What have I read cover to cover over the last few months?"},
}, {
	pool: []string{"Marcus", "Ingrid", "Tomasz", "Leila", "Hiroshi", "Beatriz", "Obinna", "Svetlana"},
	say: []string{"Did the ridge trail on Sunday with {v}, my legs are dead.",
		"Went up the mountain with {v}, amazing views.",
		"{v} and I hiked to the waterfall this weekend."},
	neg: []string{"{v} did the ridge trail with {p} on Sunday, I skipped it.",
		"{v} went up the mountain with {p} without me.",
		"{v} and {p} hiked to the waterfall, I had to cancel."},
	ask: []string{"Who have I gone hiking with?", "Name the friends who joined me on hikes."},
}, {
	pool: []string{"dishwasher", "garage door", "water heater", "back fence", "kitchen faucet", "dryer"},
	say: []string{"Finally got the {v} fixed today.",
		"A repair guy came by and sorted out the {v}.",
		"The {v} works again, the repair cost a fortune."},
	neg: []string{"{p} finally got her {v} fixed today too.",
		"The repair guy sorted out {p}'s {v} as well.",
		"{p}'s {v} works again, the repair cost her a fortune."},
	ask: []string{"What things around the house have I had repaired?", "Which appliances or fixtures got fixed at my place?"},
}}

// In knowledgeUpdate, neg[i] mirrors update[i]: the hardest distractor for
// a new value is someone else making the same change.
var knowledgeUpdate = []factTemplate{{
	pool:   []string{"Iron Temple", "FitHub", "Peak Performance", "Anytime Fitness", "Crunch", "Blink Fitness"},
	say:    []string{"My gym is {v}, right next to the office.", "I've been going to {v} three mornings a week."},
	update: []string{"I moved my membership over to {v}, the classes are better.", "Cancelled the old place, I train at {v} now."},
	neg:    []string{"{p} moved her membership over to {v} for the classes.", "{p} cancelled her old place and trains at {v} now."},
	ask:    []string{"Which gym am I a member of these days?", "Where do I currently work out?"},
}, {
	pool:   []string{"Northwind", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Logistics"},
	say:    []string{"I've been at {v} for three years now.", "Work at {v} has been hectic this quarter."},
	update: []string{"First week at {v} done! The new job is intense.", "I accepted the offer from {v} and handed in my notice."},
	neg:    []string{"{p} finished her first week at {v}, the job sounds intense.", "{p} accepted an offer from {v} last week."},
	ask:    []string{"Who is my employer at the moment?", "Which company do I work for now?"},
}, {
	pool:   []string{"commuter train", "express bus", "ferry", "e-bike", "carpool"},
	say:    []string{"I take the {v} to work every day.", "The {v} gets me to the office in forty minutes."},
	update: []string{"I've started taking the {v} to work instead, it's faster.", "Switched my commute to the {v}, no more waiting around."},
	neg:    []string{"{p} started taking the {v} to work, she says it's faster.", "{p} switched her commute to the {v} and keeps waiting around."},
	ask:    []string{"How do I get to the office nowadays?", "What is my current way of commuting?"},
}, {
	pool:   []string{"Harriet", "Gustavo", "Yusuf", "Margot", "Declan", "Anneliese"},
	say:    []string{"My manager {v} is great about flexible hours.", "Had my review with my boss {v}, it went well."},
	update: []string{"We got reorganised, {v} is my manager now.", "New team, new boss: I report to {v} from today."},
	neg:    []string{"After the reorganisation {v} became {p}'s manager.", "{p} also has a new team and will report to {v} from next month."},
	ask:    []string{"Who do I report to currently?", "Who is my boss right now?"},
}, {
	pool:   []string{"Greenpoint", "Ballard", "Fremont", "Capitol Hill", "Kerrisdale", "Mission Bay"},
	say:    []string{"We live in {v}, close to the park.", "Our flat in {v} is tiny but cosy."},
	update: []string{"We finally moved into the new place in {v}.", "Moving day is over, we're settled in {v} now."},
	neg:    []string{"{p} finally moved into a new place in {v}.", "{p} is settled in {v} now after moving day."},
	ask:    []string{"Which neighborhood is my home in now?", "Where do I live at the moment?"},
}}

// Temporal templates carry their own timing logic in generate.go; these are
// the words. Phrase pools are "key|phrase": the key is the gold answer and
// the phrase is what the user says.
var (
	saturdayActivities = []string{"kayaking", "rock climbing", "horseback riding", "paddleboarding", "ice skating", "bouldering"}
	monthClasses       = []string{"pottery", "woodworking", "salsa dancing", "sushi-making", "watercolor", "glassblowing"}
	errands            = []string{"passport|renewed my passport", "flu shot|got my flu shot", "taxes|filed my taxes", "dentist|went to the dentist", "blood|donated blood", "library card|renewed my library card"}
	tripCities         = []string{"Reykjavik", "Marrakesh", "Kyoto", "Cartagena", "Tbilisi", "Hanoi"}
)

var abstentionTemplates = []factTemplate{{
	pool:   []string{"piano", "cello", "guitar", "violin", "trumpet"},
	say:    []string{"I started {v} lessons on Tuesday evenings."},
	ask:    []string{"When are my {a} lessons?"},
	absent: []string{"harpsichord", "bassoon", "accordion", "theremin", "bagpipes"},
}, {
	pool:   []string{"Vancouver", "Melbourne", "Edinburgh", "Montreal", "Zurich"},
	say:    []string{"My cousin just moved to {v} for a new job."},
	ask:    []string{"Which city did my {a} move to?"},
	absent: []string{"godmother", "stepbrother", "great-aunt", "brother-in-law"},
}, {
	pool:   []string{"peanuts", "shellfish", "penicillin"},
	say:    []string{"I'm allergic to {v}, found out the hard way."},
	ask:    []string{"Am I allergic to {a}?"},
	absent: []string{"kiwifruit", "sesame", "latex", "buckwheat"},
}, {
	pool:   []string{"mum's birthday", "our anniversary", "my promotion"},
	say:    []string{"We booked a table at the Italian place for {v}."},
	ask:    []string{"Where are we holding the {a} party?"},
	absent: []string{"retirement", "housewarming", "graduation"},
}, {
	pool:   []string{"National Geographic", "The Atlantic", "Wired"},
	say:    []string{"I renewed my subscription to {v} yesterday."},
	ask:    []string{"When does my {a} subscription run out?"},
	absent: []string{"Netflix", "Spotify", "Peloton"},
}}

// person is one Chinese-speaking acquaintance with the aliases memstream
// must resolve to one entity: the full name, its pinyin, and a nickname.
type person struct{ full, pinyin, nick string }

var zhPeople = []person{
	{"张伟", "Zhang Wei", "老张"},
	{"李娜", "Li Na", "小李"},
	{"王芳", "Wang Fang", "芳芳"},
	{"刘洋", "Liu Yang", "阿洋"},
	{"陈静", "Chen Jing", "静静"},
	{"赵磊", "Zhao Lei", "磊子"},
	{"杨帆", "Yang Fan", "小杨"},
	{"黄敏", "Huang Min", "敏姐"},
}

var zhUserNames = []string{"林晓", "周杰", "吴桐", "孙悦", "郭靖", "何琳"}

// zhTemplate plants a fact about a person; pool values are "中文|English".
type zhTemplate struct {
	pool  []string
	say   []string // {a} alias, {v} Chinese value
	askEn []string // {a} alias
	askZh []string
}

var crossLingual = []zhTemplate{{
	pool:  []string{"杭州|Hangzhou", "成都|Chengdu", "西安|Xi'an", "厦门|Xiamen", "青岛|Qingdao", "南京|Nanjing", "昆明|Kunming"},
	say:   []string{"{a}上个月搬到{v}了，说那边房租便宜。", "听说{a}已经在{v}安顿下来了。"},
	askEn: []string{"Which city did {a} move to?"},
	askZh: []string{"{a}现在住在哪个城市？"},
}, {
	pool:  []string{"医生|doctor", "律师|lawyer", "厨师|chef", "记者|journalist", "程序员|programmer", "飞行员|pilot"},
	say:   []string{"{a}换工作了，现在当{v}，每天都很忙。", "{a}终于当上了{v}，家里人都很高兴。"},
	askEn: []string{"What does {a} do for a living now?"},
	askZh: []string{"{a}现在从事什么职业？"},
}, {
	pool:  []string{"钓鱼|fishing", "攀岩|rock climbing", "书法|calligraphy", "摄影|photography", "滑雪|skiing", "烘焙|baking"},
	say:   []string{"{a}最近迷上了{v}，周末都找不到人。", "{a}说{v}特别解压。"},
	askEn: []string{"What hobby has {a} taken up lately?"},
	askZh: []string{"{a}最近喜欢上了什么爱好？"},
}, {
	pool:  []string{"柯基|corgi", "布偶猫|ragdoll", "鹦鹉|parrot", "仓鼠|hamster", "乌龟|tortoise"},
	say:   []string{"{a}家里新养了一只{v}，天天发朋友圈。", "{a}领养了一只{v}，特别可爱。"},
	askEn: []string{"What kind of pet did {a} get?"},
	askZh: []string{"{a}养了什么宠物？"},
}, {
	pool:  []string{"复旦大学|Fudan University", "浙江大学|Zhejiang University", "清华大学|Tsinghua University", "中山大学|Sun Yat-sen University", "武汉大学|Wuhan University"},
	say:   []string{"{a}的女儿考上了{v}，请大家吃饭了。", "{a}家孩子被{v}录取了。"},
	askEn: []string{"Which university admitted {a}'s daughter?"},
	askZh: []string{"{a}的孩子考上了哪所大学？"},
}, {
	pool:  []string{"特斯拉|Tesla", "比亚迪|BYD", "宝马|BMW", "丰田|Toyota", "蔚来|NIO"},
	say:   []string{"{a}刚买了一辆{v}，开着去上班。", "{a}把旧车卖了，换了辆{v}。"},
	askEn: []string{"What car did {a} buy?"},
	askZh: []string{"{a}新买的是什么车？"},
}}

// Filler exchanges: a user turn and an assistant reply about everyday
// topics. Slots ({w} weather word, {t} task, {f} food, {s} show) keep the
// sentences from repeating verbatim.
var fillerEN = [][2]string{
	{"It's been {w} all week here, I'm over it.", "That sounds draining. Hopefully the forecast turns around soon."},
	{"The weather today is {w}, so I'm staying in.", "A quiet day indoors can be nice. Anything planned?"},
	{"Work is busy, I have to {t} before Thursday.", "That's a tight deadline. Want help breaking it into steps?"},
	{"I spent the morning trying to {t}.", "Did you manage to get through it?"},
	{"My manager asked me to {t} again, sigh.", "Repeated requests can be frustrating. Is there a way to automate it?"},
	{"Had {f} for lunch, it was pretty good.", "Nice, that sounds filling."},
	{"I'm thinking of making {f} tonight.", "Good choice for a weeknight. Do you have everything you need?"},
	{"Just started watching {s}, any thoughts?", "I've heard good things about it. Let me know how you find it."},
	{"I finished {s} yesterday, the finale was odd.", "Finales are hard to get right. What felt off?"},
	{"How do I stop my laptop fan from being so loud?", "Check which apps are using the CPU and clean the vents with compressed air."},
	{"Can you remind me how to convert Celsius to Fahrenheit?", "Multiply by nine fifths and add thirty-two."},
	{"What's a good way to keep focused in the afternoon?", "Short breaks, some water and a brief walk usually help."},
	{"Traffic was terrible this morning.", "Ugh, sorry. Did you make it in on time?"},
	{"I slept badly, the neighbours had a party.", "That's rough. Maybe go to bed early tonight."},
	{"Any tips for writing a polite follow-up email?", "Keep it short, restate the request and offer a clear next step."},
	{"My phone keeps running out of battery.", "Lowering screen brightness and turning off background refresh can help a lot."},
	{"I should really clean the apartment this weekend.", "Putting on music and doing one room at a time makes it go faster."},
	{"Do you think it's worth getting a standing desk?", "If you sit a lot, alternating can be good for comfort."},
	{"We had a long meeting about the quarterly plan.", "Long meetings are tiring. Did anything useful come out of it?"},
	{"I'm trying to drink more water.", "A bottle on your desk is a good reminder."},
	{"What's a quick way to split a bill among five people?", "Divide the total by five, then round up to cover the tip."},
	{"The printer at the office jammed again.", "Printers seem to sense deadlines. Hope it's fixed soon."},
}

var (
	fillerWeather = []string{"rainy", "grey and windy", "freezing", "sticky and humid", "foggy", "weirdly warm", "drizzly"}
	fillerTasks   = []string{"finish the budget spreadsheet", "update the slide deck", "review a pile of invoices", "clean up my inbox", "write the monthly report", "prepare onboarding notes"}
	fillerFood    = []string{"a tuna sandwich", "leftover lasagna", "ramen", "a chickpea salad", "tacos", "a burrito bowl"}
	fillerShows   = []string{"a baking competition show", "a true-crime documentary", "a space drama series", "an old sitcom", "a nature documentary"}
)

// Acknowledgements follow planted user statements, so that the evidence
// turn sits inside a natural exchange.
var acksEN = []string{
	"Thanks for telling me, I'll keep that in mind.",
	"Good to know!",
	"That's great to hear.",
	"Noted. Anything I can help with around that?",
	"Oh nice, how do you feel about it?",
}

var fillerZH = [][2]string{
	{"今天又下雨了，出门好麻烦。", "记得带伞，路上注意安全。"},
	{"这几天天气特别闷热。", "多喝水，尽量待在阴凉的地方。"},
	{"最近加班很多，有点累。", "注意休息，别把身体累坏了。"},
	{"中午吃了一碗牛肉面，味道不错。", "听起来很香，下次可以再去。"},
	{"晚上想做个番茄炒蛋。", "简单又下饭，很适合工作日。"},
	{"周末打算好好打扫一下房间。", "可以一边听音乐一边收拾，效率更高。"},
	{"手机电池越来越不耐用了。", "可以试试调低屏幕亮度，关掉后台刷新。"},
	{"今天地铁特别挤。", "早高峰确实辛苦，要不要早点出门？"},
	{"开了一下午的会，头都大了。", "长会议确实累人，有什么结论吗？"},
	{"最近在追一部古装剧。", "好看吗？讲的是什么故事？"},
	{"昨晚没睡好，楼上一直有声音。", "那今晚早点休息吧。"},
	{"怎么写一封礼貌的催促邮件？", "简短一点，重申请求，再给出明确的下一步。"},
	{"早上喝了杯豆浆，感觉精神多了。", "早餐吃好一天都有精神。"},
	{"办公室的打印机又卡纸了。", "希望尽快修好，不耽误工作。"},
}

var acksZH = []string{"原来如此，谢谢告诉我。", "好的，我记住了。", "真不错！", "哦，这个消息挺意外的。"}

// tuningVocabulary is the tuning part: the vocabulary recall work was
// developed against since the benchmark's first version.
var tuningVocabulary = vocabulary{
	part:         PartTuning,
	bankPrefix:   "tune",
	start:        time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC),
	userNames:    userNames,
	otherPeople:  otherPeople,
	ssu:          singleSessionUser,
	ssa:          singleSessionAssistant,
	ssp:          singleSessionPreference,
	multi:        multiSession,
	update:       knowledgeUpdate,
	abstention:   abstentionTemplates,
	temporal:     (*bankGen).plantTuningTemporal,
	zhUserNames:  zhUserNames,
	zhPeople:     zhPeople,
	crossLingual: crossLingual,
	fillerEN:     fillerEN,
	fillerZH:     fillerZH,
	fillerSlots:  map[string][]string{"w": fillerWeather, "t": fillerTasks, "f": fillerFood, "s": fillerShows},
	acksEN:       acksEN,
	acksZH:       acksZH,
}
