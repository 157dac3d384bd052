package eval

import "time"

// The held-out part (PartHeldOut). It was written in one sitting, from
// general knowledge of how people chat with an assistant, before any
// result on it existed, and is never tuned against: its misses are not
// written out, and a change to memstream is judged by its numbers only as
// a whole. Its names, values, phrasings, situations, filler and time
// expressions are its own (none is shared with the tuning part), its
// sessions happen a year earlier, and some of its turns say more than one
// thing. The same rules as the tuning tables apply: pool values are not
// substrings of one another or of the filler, a hard negative mirrors the
// evidence it competes with (TestGoldOnlyInEvidence, TestHardNegativesExist).

var heldOutUserNames = []string{"Rosa", "Theo", "Anika", "Samir", "Wren", "Callum", "Zainab", "Mateo", "Freya", "Kwame", "Lena", "Oscar", "Yara", "Bruno", "Ines", "Felix"}

var heldOutOtherPeople = []string{"Tess", "Ahmed", "Brigid", "Carlos", "Hana", "Viktor", "Simone", "Raj", "Elena", "Marco"}

var heldOutSSU = []factTemplate{{
	pool: []string{"Otis", "Matilda", "Ezra", "Poppy", "Jasper", "Imogen", "Rupert", "Saoirse"},
	say: []string{"My brother rang at six this morning, the baby's here! They named him {v}, which I love.",
		"Big family news: my sister had her baby over the weekend and the little one is called {v}."},
	neg: []string{"{p} rang this morning, her baby's here! They named him {v}.",
		"Big news from {p}: she had her baby over the weekend and the little one is called {v}."},
	ask: []string{"What's the name of the newest baby in my family?", "What did my sibling call their newborn?"},
}, {
	pool: []string{"clarinet", "drum kit", "ukulele", "saxophone", "trombone", "bass guitar", "flute"},
	say: []string{"We finally gave in and rented a {v} for my son, so the house is very loud now.",
		"My son has his first {v} recital next month and he practises every night after dinner."},
	neg: []string{"{p} gave in and rented a {v} for her son, so her house is loud now.",
		"{p}'s son has his first {v} recital next month, she says he practises every night."},
	ask: []string{"What instrument is my boy learning to play?", "Which instrument does my kid practise?"},
}, {
	pool: []string{"Santorini", "Zanzibar", "the Amalfi Coast", "Patagonia", "the Lofoten Islands", "Tasmania", "Sri Lanka"},
	say: []string{"Still daydreaming about our honeymoon in {v}. Two weeks of doing absolutely nothing.",
		"Back from {v} and married life is off to a good start, best trip of our lives."},
	neg: []string{"{p} is still daydreaming about her honeymoon in {v}, two weeks of doing nothing.",
		"{p} is back from {v}, she says married life is off to a good start."},
	ask: []string{"Where did we travel after getting married?", "What was the destination of our honeymoon?"},
}, {
	pool: []string{"the animal shelter", "a food bank", "the community garden", "a hospice", "the public library", "a soup kitchen"},
	say: []string{"I've started volunteering at {v} on Sunday mornings, it's honestly the best part of my week.",
		"Did my first shift at {v} today. Exhausting, but I'm signing up for more."},
	neg: []string{"{p} has started volunteering at {v} on Sunday mornings.",
		"{p} did her first shift at {v} today and signed up for more."},
	ask: []string{"Where do I help out as a volunteer?", "Where have I been doing charity work on weekends?"},
}, {
	pool: []string{"Portuguese", "Korean", "Turkish", "Swahili", "Welsh", "Vietnamese", "Hungarian"},
	say: []string{"Day forty of my {v} streak on the app! I can finally order a coffee without panicking.",
		"signed up for evening {v} classes at the community college, the teacher is strict but good"},
	neg: []string{"{p} is on day forty of her {v} streak on the app.",
		"{p} signed up for evening {v} classes at the community college."},
	ask: []string{"Which foreign language am I studying?", "What language have I been learning lately?"},
}}

var heldOutSSA = []factTemplate{{
	pool: []string{"Hardcore History", "Radiolab", "99% Invisible", "Serial", "Song Exploder", "The Rest Is History", "Revisionist History"},
	req: []string{"I've got a three-hour drive to my parents' on Friday, what should I listen to?",
		"Need something good for a long solo drive, any podcast ideas?"},
	say: []string{"Put on {v}. The episodes are long and it makes the miles fly by.",
		"I'd queue up {v}, it's gripping enough that you'll sit in the driveway to finish an episode."},
	negReq: []string{"{p} needs something to listen to while she paints her flat.",
		"{p} asked what to put on during her night shifts."},
	neg: []string{"For painting, put on {v}; the episodes are long and it makes the hours fly by.",
		"For her night shifts I'd queue up {v}, it's gripping enough to keep her awake."},
	ask: []string{"Which show did you tell me to listen to in the car?", "What did you suggest I play on the way to see my parents?"},
}, {
	pool: []string{"cast-iron skillet", "telescope", "record player", "espresso machine", "weather station", "bird feeder camera"},
	req: []string{"My dad turns sixty next month and I'm completely out of ideas. Help?",
		"What do you get a father who says he wants nothing for his birthday?"},
	say: []string{"How about a {v}? It's the kind of thing people love but never buy for themselves.",
		"A good {v} is a safe bet: practical, a bit indulgent, and he'll use it for years."},
	negReq: []string{"{p} needs a leaving present for her manager.",
		"{p} is stuck on what to get her grandmother."},
	neg: []string{"For her manager, how about a {v}? People love it but never buy one themselves.",
		"A good {v} is a safe bet for her grandmother, practical and a bit indulgent."},
	ask: []string{"What present did you suggest for my father?", "What did you think I should give my dad for his birthday?"},
}, {
	pool: []string{"Codenames", "Ticket to Ride", "Wingspan", "Dixit", "Azul", "Carcassonne", "Catan"},
	req: []string{"Six of us are getting together on Saturday and we're sick of Monopoly, what should we play?",
		"Any tabletop recommendations for a big group with a couple of non-gamers in it?"},
	say: []string{"{v} is perfect for that: the rules take five minutes and it works well with six.",
		"Try {v}. Newcomers pick it up straight away and it still has enough strategy for everyone else."},
	negReq: []string{"{p} wants something to play with just her partner on weeknights.",
		"{p} is looking for a game her kids can play."},
	neg: []string{"For two players, {v} is perfect: the rules take five minutes.",
		"Try {v} with her kids, newcomers pick it up straight away."},
	ask: []string{"What game did you recommend for our games night?", "Which tabletop game did you suggest for the group?"},
}, {
	pool: []string{"baking soda", "club soda", "hydrogen peroxide", "shaving foam", "borax"},
	req: []string{"Someone knocked a glass of red over on the cream carpet, what do I do?",
		"How do I get a red wine stain out of a rug before my landlord sees it?"},
	say: []string{"Blot up as much as you can, then work in some {v} and leave it for ten minutes before rinsing.",
		"Don't rub it! Dab it with cold water, then use {v}; it lifts most of the colour."},
	negReq: []string{"{p} spilled coffee on her white sofa.",
		"{p} got grass stains on her son's football kit."},
	neg: []string{"For the sofa, blot up what she can, then work in some {v} and leave it ten minutes.",
		"Dab the grass stains with cold water, then use {v}; it lifts most of the colour."},
	ask: []string{"What did you tell me to use on the wine spill?", "How did you say I should clean the stain from the party?"},
}, {
	pool: []string{"4-7-8 breathing", "box breathing", "a body scan", "progressive muscle relaxation", "cognitive shuffling"},
	req: []string{"I've been lying awake until 2am most nights, any tips?",
		"My brain won't switch off at bedtime lately. What can I try?"},
	say: []string{"Try {v} once the lights are off; most people feel drowsy within a few minutes.",
		"A lot of people swear by {v}. Do it in bed and don't check your phone afterwards."},
	negReq: []string{"{p} gets anxious before job interviews.",
		"{p} can't relax on long-haul flights."},
	neg: []string{"Before interviews she could try {v}; most people feel calmer within a few minutes.",
		"A lot of nervous flyers swear by {v}, she can do it in her seat."},
	ask: []string{"What technique did you suggest for my trouble sleeping?", "What did you tell me to do when I can't nod off?"},
}}

var heldOutSSP = []factTemplate{{
	pool: []string{"aisle seat", "window seat", "exit row", "bulkhead row"},
	say: []string{"I'll happily pay extra to get the {v}, long flights are miserable otherwise.",
		"Whenever I fly it has to be the {v}. I get cranky anywhere else."},
	neg: []string{"{p} happily pays extra to get the {v}, she says long flights are miserable otherwise.",
		"Whenever {p} flies it has to be the {v}, she gets cranky anywhere else."},
	ask: []string{"Can you book my flight to the conference next month?", "I'm about to check in online for my trip, anything I should pick?"},
}, {
	pool: []string{"Ethiopian food", "Sichuan food", "Georgian food", "Peruvian food", "Lebanese food", "Oaxacan food"},
	say: []string{"Whenever we eat out I end up craving {v}, I never get bored of it.",
		"honestly my comfort meal is {v}, I could have it three times a week"},
	neg: []string{"Whenever {p} eats out she ends up craving {v}.",
		"{p}'s comfort meal is {v}, she could have it three times a week."},
	ask: []string{"Where should we go for dinner on my birthday?", "Pick a restaurant for Friday night?"},
}, {
	pool: []string{"trail running", "open-water swimming", "road cycling", "kayak touring", "nordic walking"},
	say: []string{"Gyms bore me to tears, I'd much rather be outside doing {v}.",
		"The only exercise I actually stick with is {v}, ideally somewhere with a view."},
	neg: []string{"Gyms bore {p} to tears, she'd rather be outside doing {v}.",
		"The only exercise {p} sticks with is {v}, ideally somewhere with a view."},
	ask: []string{"Help me put together a plan to get fitter this spring.", "What workout routine would suit me?"},
}, {
	pool: []string{"Scandinavian crime", "hard science fiction", "gothic horror", "narrative nonfiction", "magical realism"},
	say: []string{"I read almost nothing but {v}, the bleaker the better.",
		"If it isn't {v} I probably won't finish it, I've tried."},
	neg: []string{"{p} reads almost nothing but {v}, the bleaker the better.",
		"If it isn't {v} {p} probably won't finish it, she's tried."},
	ask: []string{"What should I read next?", "Got a book recommendation for my holiday?"},
}, {
	pool: []string{"city breaks", "hiking trips", "food tours", "road trips", "ski trips"},
	say: []string{"Beaches bore me after a day, I'm much happier on {v}.",
		"Our best holidays have always been {v}, we never do resorts."},
	neg: []string{"{p} gets bored on beaches after a day, she's happier on {v}.",
		"{p}'s best holidays have always been {v}, she never does resorts."},
	ask: []string{"Can you plan a week away for me this autumn?", "What kind of getaway should I book for my time off?"},
}}

var heldOutMulti = []factTemplate{{
	pool: []string{"Bon Iver", "Khruangbin", "Alvvays", "Fontaines D.C.", "The National", "Big Thief", "Vampire Weekend", "Phoenix"},
	say: []string{"Saw {v} live last night, my ears are still ringing.",
		"Finally caught {v} on tour, worth every penny.",
		"We drove two hours to see {v} play and it was so worth it."},
	neg: []string{"{p} saw {v} live last night, she won't stop talking about it.",
		"{p} caught {v} on tour, I couldn't get a ticket.",
		"{p} drove two hours to see {v} play without me."},
	ask: []string{"Which bands have I seen perform live?", "What concerts have I been to?"},
}, {
	pool: []string{"beef wellington", "pad thai", "shakshuka", "croissants", "paella", "gnocchi", "moussaka", "bibimbap"},
	say: []string{"Made {v} from scratch tonight, the kitchen is a disaster.",
		"Tried my hand at {v} for the first time, not bad at all!",
		"Sunday project: {v}. Took all afternoon but we ate like kings."},
	neg: []string{"{p} made {v} from scratch and sent me photos.",
		"{p} tried {v} for the first time and burned it.",
		"{p}'s Sunday project was {v}, she didn't invite me."},
	ask: []string{"What dishes have I cooked myself?", "List the things I've made in the kitchen lately."},
}, {
	pool: []string{"Rufus", "Delphine", "Kofi", "Mirela", "Anders", "Paloma", "Ivo", "Sunita"},
	say: []string{"{v} stayed with us for the weekend, the guest room finally got some use.",
		"Picked {v} up from the airport, they're crashing on our sofa until Tuesday.",
		"Had {v} over for a few nights, we barely slept from talking so much."},
	neg: []string{"{v} stayed with {p} for the weekend instead of us.",
		"{p} picked {v} up from the airport, they're crashing at hers.",
		"{v} spent a few nights at {p}'s, they barely slept from talking."},
	ask: []string{"Who has stayed over at my place?", "Which friends have been my houseguests?"},
}, {
	pool: []string{"Tate Modern", "the Rijksmuseum", "the Prado", "the Getty", "MoMA", "the Uffizi", "the Hermitage"},
	say: []string{"Spent the whole afternoon wandering around {v}, my feet hurt.",
		"Finally made it to {v}! Could have stayed a week.",
		"Dragged the family to {v} this morning, the kids loved it more than expected."},
	neg: []string{"{p} spent the afternoon wandering around {v} and sent me a hundred photos.",
		"{p} finally made it to {v}, she loved it.",
		"{p} dragged her family to {v} this morning."},
	ask: []string{"Which museums have I visited?", "Name the galleries I've been to."},
}}

// In heldOutUpdate, neg[i] mirrors update[i].
var heldOutUpdate = []factTemplate{{
	pool:   []string{"Monzo", "Revolut", "Barclays", "Starling", "Nationwide", "Santander"},
	say:    []string{"All my money's with {v}, has been since uni.", "I do all my banking through {v}, their app is fine I guess."},
	update: []string{"Closed my old account and moved everything over to {v} this week.", "Switched banks! I'm with {v} now, the old one kept charging me fees."},
	neg:    []string{"{p} closed her old account and moved everything over to {v}.", "{p} switched banks, she's with {v} now because of the fees."},
	ask:    []string{"Who do I bank with at the moment?", "Which bank holds my current account now?"},
}, {
	pool:   []string{"junior analyst", "team lead", "senior designer", "head of sales", "staff engineer", "charge nurse"},
	say:    []string{"I'm a {v} at the moment, same as last year.", "Work's fine, still a {v}, still underpaid."},
	update: []string{"Got the promotion! From Monday my title is {v}.", "They finally made it official, I'm {v} now."},
	neg:    []string{"{p} got a promotion, from Monday her title is {v}.", "They finally made it official, {p} is {v} now."},
	ask:    []string{"What's my job title these days?", "What position do I hold at work now?"},
}, {
	pool:   []string{"Pixel 8", "iPhone 15", "Galaxy S24", "Fairphone 5", "OnePlus 12"},
	say:    []string{"My {v} is three years old and the battery is dying.", "I've had this {v} forever, it still works fine."},
	update: []string{"Treated myself to a {v}, the camera is unreal.", "Old phone finally died so I picked up a {v} at lunch."},
	neg:    []string{"{p} treated herself to a {v}, she says the camera is unreal.", "{p}'s old phone finally died so she picked up a {v}."},
	ask:    []string{"What phone am I using now?", "Which handset do I currently have?"},
}, {
	pool:   []string{"half marathon", "10K", "sprint triathlon", "full marathon", "50K trail race"},
	say:    []string{"Training for a {v} in October, the long runs are brutal.", "Signed up for a {v} this autumn, wish me luck."},
	update: []string{"Change of plans, I've switched my entry to the {v} instead.", "Decided to go for the {v} after all, so the training plan is new."},
	neg:    []string{"{p} has switched her entry to the {v} instead.", "{p} decided to go for the {v} after all."},
	ask:    []string{"What race am I training for now?", "Which event is my running plan building up to?"},
}, {
	pool:   []string{"Little Acorns", "Sunbeam Nursery", "Bright Horizons", "Tiny Steps", "Busy Bees"},
	say:    []string{"Our son goes to {v} three days a week.", "Drop-off at {v} was chaos this morning."},
	update: []string{"We moved our son to {v}, it's much closer to work.", "First week at {v} for the little one and he loves it."},
	neg:    []string{"{p} moved her daughter to {v}, closer to her office.", "It was the first week at {v} for {p}'s little one."},
	ask:    []string{"Which nursery does my son go to now?", "Where is my little boy in childcare these days?"},
}}

var heldOutAbstention = []factTemplate{{
	pool:   []string{"Glasgow", "Valencia", "Gdansk", "Bergen", "Ljubljana"},
	say:    []string{"My flatmate is originally from {v}, she goes back every Christmas."},
	ask:    []string{"Where is my {a} originally from?"},
	absent: []string{"landlady", "stepmother", "godfather", "sister-in-law"},
}, {
	pool:   []string{"leaky roof", "broken intercom", "front steps", "cracked window"},
	say:    []string{"The landlord finally sent someone to fix the {v}."},
	ask:    []string{"When is someone coming to repair the {a}?"},
	absent: []string{"elevator", "chimney", "skylight", "garbage disposal"},
}, {
	pool:   []string{"greyhound", "tabby cat", "rabbit", "cockatiel"},
	say:    []string{"We adopted a {v} from the rescue centre last month."},
	ask:    []string{"How old is my {a}?"},
	absent: []string{"iguana", "ferret", "alpaca", "hedgehog"},
}, {
	pool:   []string{"ballet", "opera", "symphony", "musical"},
	say:    []string{"I've got two tickets for the {v} on Friday night."},
	ask:    []string{"Where is the {a} I bought tickets for?"},
	absent: []string{"rodeo", "circus", "wrestling match", "monster truck show"},
}, {
	pool:   []string{"car", "home", "travel"},
	say:    []string{"Just renewed my {v} insurance, the price went up again."},
	ask:    []string{"When does my {a} insurance run out?"},
	absent: []string{"motorbike", "jewellery", "dental", "pet health"},
}}

// Phrase pools of the held-out temporal questions, "key|phrase" as in the
// tuning part.
var (
	heldOutChores = []string{"oil change|got the car's oil changed", "eye test|had an eye test", "haircut|got a haircut",
		"boiler|had the boiler serviced", "visa|picked up my visa", "dry cleaning|picked up the dry cleaning"}
	heldOutWeekends = []string{"camping|went camping by the lake", "wine tasting|did a wine tasting out in the valley",
		"escape room|tried an escape room with friends", "stargazing|went stargazing out past the city",
		"zoo|took the kids to the zoo", "go-karting|went go-karting", "flea market|wandered round a flea market"}
	heldOutMornings = []string{"yoga|did a yoga class", "lido|went for a swim at the lido", "farmers market|went to the farmers market",
		"pancakes|made pancakes for everyone", "canal|went for a bike ride along the canal", "parkrun|did the parkrun"}
	heldOutMilestones = []string{"blood test|had a blood test", "job interview|had a job interview", "driving test|took my driving test",
		"jury duty|did jury duty", "flu jab|got my flu jab"}
)

// plantHeldOutTemporal plants k temporal-reasoning questions of the
// held-out part, each of a different kind: "yesterday" and "n weeks ago"
// asked by calendar date, "this morning" asked by date, and "last
// weekend" asked a day later. Each has a distractor phrased the same way
// on another day, so only the time tells them apart.
func (g *bankGen) plantHeldOutTemporal(k int) {
	n := len(g.sessions)
	day := func(s int) time.Time { return g.sessions[s].start.Truncate(24 * time.Hour) }
	planted := 0
	for _, kind := range g.order(4) {
		if planted == k {
			return
		}
		switch kind {
		case 0: // "yesterday", asked by date
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOutChores))
			say := []string{"Yesterday I {v}. Feels good to have it sorted.", "Finally {v} yesterday, one less thing on the list."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			_, other := splitKey(g.draw(heldOutChores))
			g.userSays(g.sessionIn(0, n, s), fill("Yesterday I {v}, what a faff.", "v", other), false)
			asks := []string{"What did I get done on {d}?", "Which chore did I finish on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).AddDate(0, 0, -1).Format("Monday, January 2")), g.end(), []string{key}, ev)
		case 1: // "last weekend", asked a day later
			s, ok := g.earlyWeekSession()
			if !ok {
				continue
			}
			key, phrase := splitKey(g.draw(heldOutWeekends))
			say := []string{"Last weekend we {v}, I'm still recovering.", "We {v} last weekend and it was the best."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			_, theirs := splitKey(g.draw(heldOutWeekends))
			g.userSays(g.sessionIn(0, n, s), fill("Last weekend {p} {v} and loved it.", "v", theirs, "p", pick(g.rng, g.v.otherPeople)), false)
			// Our own "last weekend" of another week: only the query time
			// says which weekend is meant.
			if otherWeeks := g.otherWeekSessions(s); len(otherWeeks) > 0 {
				_, ours := splitKey(g.draw(heldOutWeekends))
				g.userSays(pick(g.rng, otherWeeks), fill("Last weekend we {v}, never again.", "v", ours), false)
			}
			asks := []string{"What did we get up to last weekend?", "How did we spend last weekend?"}
			g.ask(TypeTemporalReasoning, pick(g.rng, asks), g.sessions[s].start.Add(24*time.Hour), []string{key}, ev)
		case 2: // "this morning", asked by date
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOutMornings))
			say := []string{"This morning I {v} before work, great start to the day.", "{v} this morning, now I'm starving."}
			text := fill(pick(g.rng, say), "v", phrase)
			ev := g.userSays(s, upperFirst(text), true)
			_, other := splitKey(g.draw(heldOutMornings))
			g.userSays(g.sessionIn(0, n, s), fill("This morning I {v}, but it rained the whole time.", "v", other), false)
			asks := []string{"What did I do on the morning of {d}?", "How did I start the day on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).Format("Monday, January 2")), g.end(), []string{key}, ev)
		case 3: // "two/three weeks ago", asked by date
			s := g.sessionIn(2, n)
			weeks := 2 + g.rng.IntN(2)
			key, phrase := splitKey(g.draw(heldOutMilestones))
			ev := g.userSays(s, fill("{n} weeks ago I {v}, and I only just heard back.", "n", numberWords[weeks], "v", phrase), true)
			o := g.sessionIn(2, n, s)
			_, other := splitKey(g.draw(heldOutMilestones))
			g.userSays(o, fill("{n} weeks ago I {v}, it went fine.", "n", numberWords[2+g.rng.IntN(2)], "v", other), false)
			asks := []string{"What was I doing on {d}?", "What appointment did I have on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).AddDate(0, 0, -7*weeks).Format("Monday, January 2")), g.end(), []string{key}, ev)
		}
		planted++
	}
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

var heldOutZhUserNames = []string{"宋雨", "韩冰", "唐宁", "冯远", "蒋晴", "邓凯"}

var heldOutZhPeople = []person{
	{"周婷", "Zhou Ting", "婷婷"},
	{"马超", "Ma Chao", "老马"},
	{"徐丽", "Xu Li", "丽姐"},
	{"高飞", "Gao Fei", "小高"},
	{"罗强", "Luo Qiang", "强哥"},
	{"胡晓梅", "Hu Xiaomei", "梅子"},
	{"郑浩", "Zheng Hao", "浩子"},
	{"谢娟", "Xie Juan", "娟娟"},
}

var heldOutCrossLingual = []zhTemplate{{
	pool:  []string{"桂林|Guilin", "敦煌|Dunhuang", "哈尔滨|Harbin", "大理|Dali", "九寨沟|Jiuzhaigou", "张家界|Zhangjiajie"},
	say:   []string{"{a}国庆去{v}玩了一圈，拍了好多照片。", "{a}刚从{v}旅游回来，晒黑了不少。"},
	askEn: []string{"Where did {a} go on holiday?"},
	askZh: []string{"{a}去哪儿旅游了？"},
}, {
	pool:  []string{"钢琴|piano", "古筝|guzheng", "小提琴|violin", "二胡|erhu", "尤克里里|ukulele"},
	say:   []string{"{a}开始学{v}了，每天晚上练一个小时。", "{a}报了个{v}班，说小时候就想学。"},
	askEn: []string{"What instrument is {a} learning?"},
	askZh: []string{"{a}在学什么乐器？"},
}, {
	pool:  []string{"马拉松|marathon", "羽毛球|badminton", "乒乓球|ping pong", "象棋|Chinese chess", "游泳|swimming"},
	say:   []string{"{a}报名参加了公司的{v}比赛，最近天天练。", "{a}在{v}比赛里拿了第二名。"},
	askEn: []string{"What competition did {a} enter?"},
	askZh: []string{"{a}参加了什么比赛？"},
}, {
	pool:  []string{"华为|Huawei", "阿里巴巴|Alibaba", "腾讯|Tencent", "字节跳动|ByteDance", "小米|Xiaomi", "京东|JD.com"},
	say:   []string{"{a}跳槽去了{v}，工资涨了不少。", "{a}下周一开始在{v}上班。"},
	askEn: []string{"Which company did {a} join?"},
	askZh: []string{"{a}去哪家公司上班了？"},
}, {
	pool:  []string{"沙拉|salad", "燕麦|oatmeal", "鸡胸肉|chicken breast", "水煮蛋|boiled eggs", "红薯|sweet potato"},
	say:   []string{"{a}在减肥，中午只吃{v}。", "{a}说这个月每天晚饭都是{v}。"},
	askEn: []string{"What has {a} been eating to lose weight?"},
	askZh: []string{"{a}减肥吃的是什么？"},
}, {
	pool:  []string{"三亚|Sanya", "丽江|Lijiang", "黄山|Huangshan", "北海|Beihai", "鼓浪屿|Gulangyu"},
	say:   []string{"{a}的婚礼定在{v}办，大家都要去。", "{a}打算在{v}举办婚礼。"},
	askEn: []string{"Where is {a} getting married?"},
	askZh: []string{"{a}的婚礼在哪里举行？"},
}}

var heldOutFillerEN = [][2]string{
	{"ugh, the train got cancelled again and I waited forty minutes on the platform", "That's so frustrating. Did they at least say why?"},
	{"Spent my whole lunch break trying to {c}.", "That's a lot of lunch break. Did you get it done?"},
	{"I have to {c} before my in-laws show up on Sunday.", "Sounds like a busy weekend ahead. Want a checklist?"},
	{"Dinner tonight was {m}, not my finest effort.", "Hey, it still counts as cooking!"},
	{"Thinking about {m} for the kids tonight, they're fussy though.", "Kids can be picky. Letting them help make it sometimes works."},
	{"Is it normal for my knees to click when I go up stairs?", "Occasional clicking without pain is usually harmless, but see a doctor if it starts to hurt."},
	{"How long should I boil an egg for a runny yolk?", "About six minutes once the water is bubbling, then straight into cold water."},
	{"My neighbour's dog barked all night.", "That's hard on sleep. Maybe have a friendly word with them?"},
	{"I keep forgetting to water my tomatoes.", "A reminder on your phone at the same time every evening might help."},
	{"Any idea how to get my toddler to nap?", "A consistent wind-down routine and a dark room usually make a difference."},
	{"We binged {g} all weekend, no regrets.", "Sounds like a proper rest. Was it good?"},
	{"Everyone at work is talking about {g}, should I start it?", "If you like the genre, the first episode should tell you quickly."},
	{"My laptop takes ages to boot lately.", "Disabling start-up apps and freeing some disk space often speeds it up."},
	{"It's pouring and I forgot my umbrella.", "Oh no. Maybe wait it out somewhere dry for a bit?"},
	{"Got stuck in a two-hour meeting that could have been an email.", "The classic. At least it's over now."},
	{"Can you explain what a Roth IRA is in one sentence?", "It's a retirement account you pay into with taxed money, so the withdrawals later are tax-free."},
	{"How many grams are in a cup of flour?", "Roughly 120 to 125 grams, depending on how you scoop it."},
	{"I should stretch more, I'm so stiff in the mornings.", "Even five minutes right after waking up can loosen things."},
	{"the wifi at the office is down again", "That's annoying. Is a hotspot from your phone an option for now?"},
	{"Just realised I've had three coffees before 10am.", "Maybe make the next one a glass of water!"},
	{"My car is making a weird rattling noise.", "Worth getting it checked soon, a rattle can be a loose heat shield or worse."},
	{"Do you know a good way to remember people's names?", "Repeat the name back when you're introduced and use it once more before you leave."},
}

var heldOutFillerSlots = map[string][]string{
	"c": {"sort out the recycling", "fix the wobbly shelf", "clear out the garage", "book a plumber", "unclog the sink", "reply to forty emails"},
	"m": {"beans on toast", "a sad microwave curry", "fish fingers", "a veggie stir-fry", "cheese toasties", "leftover chili"},
	"g": {"a Danish crime drama", "that new heist show", "an old detective show", "a cooking competition", "a wildlife documentary"},
}

var heldOutAcksEN = []string{
	"Ah, that's lovely news.",
	"Got it, thanks for filling me in.",
	"Oh wow, congratulations!",
	"That sounds like a big change.",
	"Makes sense, I'll remember that.",
	"Love that for you.",
}

var heldOutFillerZH = [][2]string{
	{"楼下新开了一家奶茶店，排队的人好多。", "新店开业总是很热闹，过几天再去吧。"},
	{"今天被领导表扬了一句，心情不错。", "继续保持！"},
	{"地铁上又有人外放视频，好烦。", "确实挺影响别人的，可以戴个耳机。"},
	{"周末想去爬山，不知道天气怎么样。", "出发前看看天气预报，带件外套。"},
	{"我家猫今天把花瓶打碎了。", "哈哈，猫总是这样，没伤着就好。"},
	{"最近睡得太晚，早上起不来。", "试着每天提前半小时上床。"},
	{"快递又延迟了，说是天气原因。", "这个季节经常这样，再等等吧。"},
	{"晚饭吃了火锅，现在好撑。", "吃完散散步，消化一下。"},
	{"电脑突然蓝屏了，文件差点没保存。", "记得经常保存，也可以打开自动备份。"},
	{"今天下班路上看到了很美的晚霞。", "拍照了吗？这样的天空不常见。"},
	{"周一的例会又拖了一个小时。", "会议太长确实影响效率，可以提前发议程。"},
	{"家里的空调不太制冷了。", "可能需要清洗滤网了。"},
}

var heldOutAcksZH = []string{"明白了，谢谢你跟我说。", "哇，恭喜恭喜！", "这个变化挺大的。", "嗯嗯，我记下了。", "听起来很不错呀。"}

// heldOutVocabulary is the held-out part. Its sessions begin a year
// before the tuning part's.
var heldOutVocabulary = vocabulary{
	part:         PartHeldOut,
	bankPrefix:   "held",
	start:        time.Date(2025, time.February, 10, 0, 0, 0, 0, time.UTC),
	userNames:    heldOutUserNames,
	otherPeople:  heldOutOtherPeople,
	ssu:          heldOutSSU,
	ssa:          heldOutSSA,
	ssp:          heldOutSSP,
	multi:        heldOutMulti,
	update:       heldOutUpdate,
	abstention:   heldOutAbstention,
	temporal:     (*bankGen).plantHeldOutTemporal,
	zhUserNames:  heldOutZhUserNames,
	zhPeople:     heldOutZhPeople,
	crossLingual: heldOutCrossLingual,
	fillerEN:     heldOutFillerEN,
	fillerZH:     heldOutFillerZH,
	fillerSlots:  heldOutFillerSlots,
	acksEN:       heldOutAcksEN,
	acksZH:       heldOutAcksZH,
}
