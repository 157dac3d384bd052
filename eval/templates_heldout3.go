package eval

import (
	"fmt"
	"time"
)

// The third held-out part (PartHeldOut3). Like the second, it was written
// blind, in one sitting, by a writer who had seen no result of memstream's
// recall on any part (no report, no misses file, no earlier part's
// sentences beyond the Go shape of one template of each kind), from
// general knowledge of how people chat with an assistant about their
// lives and their work. It is never tuned against: its misses are not
// written out. Its names, values, phrasings, situations, filler,
// acknowledgements and time expressions are its own ("this morning" asked
// about the next day as "yesterday morning", a weekday of the same week
// such as "on Tuesday", "last month" asked by the month's name, and a plan
// "on the 21st" asked by its date), and its sessions happen in 2022,
// before every other part's. Written first from general knowledge, about
// a hundred of its values turned out to be the earlier parts' too and were
// replaced until TestHeldOut3SharesNothing passed. The same rules as the other tables apply:
// pool values are not substrings of one another or of the filler, and a
// hard negative mirrors the evidence it competes with
// (TestGoldOnlyInEvidence, TestHardNegativesExist).

var heldOut3UserNames = []string{"Jocasta", "Ewan", "Peregrine", "Dario", "Henrietta", "Lysander", "Yusra", "Florian", "Cosima", "Barnaby", "Ngozi", "Lars", "Perpetua", "Cormac", "Philomena", "Aurelio"}

var heldOut3OtherPeople = []string{"Gwendolyn", "Ragnhild", "Morwenna", "Isolde", "Bronwen", "Leocadia", "Wilhelmina", "Theodora", "Leontyne", "Araminta"}

var heldOut3SSU = []factTemplate{{
	pool: []string{"Lodestar", "Kestrel", "Quokka", "Sandpiper", "Tundra", "Halibut", "Zephyr"},
	say: []string{"We kicked off the new project today, it's codenamed {v} and I'm the lead on it.",
		"Big news at work: I'm running the project codenamed {v}. Slightly terrified."},
	neg: []string{"{p}'s team kicked off a new project today, it's codenamed {v}.",
		"{p} is running the project codenamed {v} at her work."},
	ask: []string{"What's the code name of the project I'm leading?", "Which internal project name did my new work thing get?"},
}, {
	pool: []string{"Pretzel", "Bramble", "Biscotti", "Fudge", "Crumpet", "Churro"},
	say: []string{"We adopted a rescue lurcher at the weekend and the kids have named her {v}.",
		"Meet the newest member of the household: a scruffy lurcher called {v}!"},
	neg: []string{"{p} adopted a rescue lurcher at the weekend and named her {v}.",
		"{p} has a scruffy lurcher called {v} now."},
	ask: []string{"What's our dog called?", "What name did the kids give the hound we took in?"},
}, {
	pool: []string{"1:58:42", "2:04:17", "1:49:05", "2:11:38", "1:53:26", "2:07:51"},
	say: []string{"Did it! First ten-mile trail race done, chip time {v}. My legs have filed a complaint.",
		"Official result just came through for the trail race: {v}. I'll take it."},
	neg: []string{"{p} did her first ten-mile trail race, chip time {v}.",
		"{p}'s official result came through for the trail race: {v}."},
	ask: []string{"How long did it take me to get round the course?", "What was my finishing time in that race through the hills?"},
}, {
	pool: []string{"quantity surveyor", "UX researcher", "paralegal", "actuary", "stage manager", "orthoptist"},
	say: []string{"The offer letter arrived this afternoon, I'm officially the new {v} from next month!",
		"Signed the contract. Starting in four weeks as their new {v}, which still sounds made up."},
	neg: []string{"{p}'s offer letter arrived, she's officially the new {v} from next month.",
		"{p} signed the contract, she's starting soon as their new {v}."},
	ask: []string{"What role did I just get hired into?", "What's the title of the job I accepted?"},
}, {
	pool: []string{"Moonpenny", "Sable Cove", "Little Hobb", "Ravensworth", "Tarn End", "Wick Hollow"},
	say: []string{"We finally picked a name for the residents' association newsletter: {v}. My idea, thank you very much.",
		"The village committee voted and my suggestion won, the newsletter is now called {v}."},
	neg: []string{"{p}'s residents' association picked a name for their newsletter: {v}.",
		"{p}'s village committee voted and the newsletter is now called {v}."},
	ask: []string{"What did the newsletter end up being called thanks to me?", "Which title of mine got chosen for the community bulletin?"},
}}

var heldOut3SSA = []factTemplate{{
	pool: []string{"Hanabi", "Takenoko", "Cascadia", "Splendor", "Kingdomino", "Sushi Go"},
	req: []string{"We need a board game that my seven-year-old and my dad can both enjoy, any ideas?",
		"Christmas at ours means three generations at one table. What game works for all of them?"},
	say: []string{"Try {v}: the rules take five minutes to explain and it plays well with mixed ages.",
		"I'd go with {v}. Turns are quick, nobody gets knocked out, and grandparents tend to love it."},
	negReq: []string{"{p} wants a game just for her and her partner on quiet evenings.",
		"{p} is after something to play on a long train journey."},
	neg: []string{"For two players, try {v}: the rules take five minutes to explain.",
		"On a train I'd go with {v}. Turns are quick and it packs small."},
	ask: []string{"Which game did you suggest for the whole family to play together?", "What did you tell me to get for the multi-generation games night?"},
}, {
	pool: []string{"XLOOKUP", "SUMIFS", "COUNTIFS", "TEXTJOIN", "SUMPRODUCT", "AVERAGEIFS"},
	req: []string{"I've got a new admin job and everyone lives in Excel. Which formula should I learn first?",
		"What's the one spreadsheet function that would make me look competent at the new office?"},
	say: []string{"Start with {v}; it'll save you hours on the monthly reports.",
		"Learn {v} properly first. Most of the monthly reporting you'll see leans on it."},
	negReq: []string{"{p} is building a household budget tracker, which formula does she need?",
		"{p} keeps her club's accounts in a spreadsheet and wants to tidy it up."},
	neg: []string{"For a budget tracker, start with {v}; it'll save hours on monthly totals.",
		"For the club's accounts, learn {v} properly first. Most of the reporting leans on it."},
	ask: []string{"Which Excel function did you tell me to master first?", "What formula did you recommend for my new admin role?"},
}, {
	pool: []string{"chana masala", "falafel", "socca", "panelle", "harira", "leblebi"},
	req: []string{"I've got three tins of chickpeas and zero inspiration. What should I cook tonight?",
		"The cupboard is basically chickpeas at this point. Dinner idea, please?"},
	say: []string{"Make {v}; it uses them up nicely and you probably have the spices already.",
		"How about {v}? Cheap, filling and very hard to get wrong."},
	negReq: []string{"{p} bought a huge bag of dried chickpeas and doesn't know what to do with them.",
		"{p} needs a chickpea dish she can bring to a potluck."},
	neg: []string{"With dried ones, make {v}; it uses them up nicely once they're soaked.",
		"For a potluck, how about {v}? Cheap, filling and it travels well."},
	ask: []string{"What dish did you come up with for my tins of chickpeas?", "What did you tell me to make with the stuff in my cupboard?"},
}, {
	pool: []string{"Cornell method", "Zettelkasten method", "mind-map method", "sketchnote method", "outline method", "charting method"},
	req: []string{"I come out of every meeting with pages of scribbles and no idea what I agreed to. How should I take notes?",
		"My meeting notes are useless a week later. Is there a better system?"},
	say: []string{"I'd try the {v}; it makes it easy to pull the action points out afterwards.",
		"Give the {v} a go for a fortnight. It forces you to summarise as you write."},
	negReq: []string{"{p} is back at college and can't keep up with her lectures.",
		"{p} wants a way to revise for her accountancy exams."},
	neg: []string{"For lectures, I'd try the {v}; it makes reviewing easy afterwards.",
		"For revision, give the {v} a go for a fortnight. It forces her to summarise."},
	ask: []string{"Which note-taking approach did you suggest I use in meetings?", "What system did you recommend so my work notes make sense later?"},
}, {
	pool: []string{"Pomodoro timer", "time-blocking plan", "priority matrix", "two-minute rule", "frog-first routine", "done list"},
	req: []string{"I sit down to work and somehow it's 4pm and I've done nothing but emails. Help?",
		"How do I stop my whole working day getting eaten by small interruptions?"},
	say: []string{"Try a {v} for a fortnight and see how much of your day comes back.",
		"A {v} might be the thing for you; it gives the day some structure without being rigid."},
	negReq: []string{"{p} says her evenings disappear into her phone.",
		"{p} can never get started on her dissertation."},
	neg: []string{"For evenings, try a {v} for a fortnight and see how much time comes back.",
		"For the dissertation a {v} might help; it gives some structure without being rigid."},
	ask: []string{"What productivity trick did you tell me to try against the email black hole?", "Which technique did you suggest so my workday doesn't vanish?"},
}}

var heldOut3SSP = []factTemplate{{
	pool: []string{"top bunk", "lower bunk", "quiet carriage", "front carriage", "single cabin"},
	say: []string{"On overnight trains I always book the {v} if I can, otherwise I get twitchy the whole way.",
		"Rule of mine for rail trips: {v} or I'm not going. Eight hours is a long time to be unhappy."},
	neg: []string{"{p} always books the {v} on overnight trains, she gets twitchy otherwise.",
		"{p}'s rule for rail trips is {v} or she's not going."},
	ask: []string{"Where do I like to be when I take the train?", "What should you pick for me when booking a long rail journey?"},
}, {
	pool: []string{"hojicha latte", "double ristretto", "oat latte", "long black", "dirty chai", "turmeric latte"},
	say: []string{"My order never changes: {v}, every morning, from the kiosk by the station.",
		"If you ever need to bribe me, bring {v}. That's all I drink."},
	neg: []string{"{p}'s order never changes, {v} every morning from the same kiosk.",
		"If you ever need to bribe {p}, bring {v}."},
	ask: []string{"How do I take my coffee?", "What should someone get me if they're doing a coffee run?"},
}, {
	pool: []string{"brown noise", "cafe chatter", "film soundtracks", "whale song", "rain sounds", "video game scores"},
	say: []string{"When I really need to focus I put {v} on in my headphones and the world goes away.",
		"Deep work only happens for me with {v} in the background. Silence is worse."},
	neg: []string{"When {p} needs to focus she puts {v} on in her headphones.",
		"For {p}, deep work only happens with {v} in the background."},
	ask: []string{"What do I like to have playing when I need to concentrate?", "What helps me get into the zone at my desk?"},
}, {
	pool: []string{"walking holiday", "city break", "narrowboat", "ski chalet", "cycling tour", "campervan trip"},
	say: []string{"Honestly, give me a {v} over lying on a beach any day. I get bored after an hour of sand.",
		"Every year the same: my partner wants sun loungers and I want a {v}."},
	neg: []string{"{p} says give her a {v} over a beach any day.",
		"Every year {p} wants a {v} and her partner wants sun loungers."},
	ask: []string{"What sort of holiday do I prefer?", "If you were planning my next time off, what style of trip would suit me?"},
}, {
	pool: []string{"audiobooks", "paperbacks", "e-books", "library hardbacks", "graphic novels"},
	say: []string{"These days I only really get through books as {v}, it's the only format that sticks.",
		"I've tried everything and {v} are what actually work for me when it comes to reading."},
	neg: []string{"These days {p} only gets through books as {v}.",
		"{p} says {v} are what actually work for her reading-wise."},
	ask: []string{"What format do I like my books in?", "How do I prefer to read?"},
}}

var heldOut3Multi = []factTemplate{{
	pool: []string{"Plovdiv", "Gdańsk", "Kaunas", "Windhoek", "Brno", "Cluj", "Trieste"},
	say: []string{"Just landed back from a work trip to {v}, the jet lag is brutal.",
		"Three days of client meetings in {v}, I saw the hotel and a conference room.",
		"Work sent me to {v} this week, at least the food was good."},
	neg: []string{"{p} just landed back from a work trip to {v}, the jet lag is brutal for her.",
		"{p} had three days of client meetings in {v}.",
		"Work sent {p} to {v} this week."},
	ask: []string{"Which places have I been sent to for work?", "Where has my job sent me this year?"},
}, {
	pool: []string{"PRINCE2", "Scrum Master", "Six Sigma Green Belt", "CIPD Level 5", "NEBOSH", "Google Analytics"},
	say: []string{"Passed my {v} exam today! Another line on the CV.",
		"Certificate came through for {v}, so all those evenings of studying paid off.",
		"Got my {v} qualification, work's paying for the next one too."},
	neg: []string{"{p} passed her {v} exam, another line on her CV.",
		"{p}'s certificate came through for {v}, all her evenings of studying paid off.",
		"{p} got her {v} qualification."},
	ask: []string{"Which professional qualifications have I picked up?", "What certifications have I got so far?"},
}, {
	pool: []string{"bird bath", "compost bin", "wormery", "fire pit", "rain barrel", "cold frame", "potting bench"},
	say: []string{"Bought a {v} for the garden today, the weekend is sorted.",
		"The {v} I ordered for the garden finally turned up.",
		"Treated myself to a {v} for out the back, no regrets."},
	neg: []string{"{p} bought a {v} for her garden today.",
		"The {v} {p} ordered for her garden finally turned up.",
		"{p} treated herself to a {v} for her backyard."},
	ask: []string{"What have I bought for the garden?", "Which things have I added to the outdoor space this year?"},
}, {
	pool: []string{"miso aubergine", "lamb tagine", "pad see ew", "mushroom stroganoff", "kedgeree", "jollof rice", "mujaddara"},
	say: []string{"Tried the {v} from the new cookbook tonight, it's a keeper.",
		"Cookbook challenge update: made the {v}, the kids even ate it.",
		"Had a go at the {v} recipe, took forever but worth it."},
	neg: []string{"{p} tried the {v} from her new cookbook tonight.",
		"{p}'s cookbook challenge update: she made the {v}.",
		"{p} had a go at the {v} recipe."},
	ask: []string{"Which recipes from the new cookbook have I made?", "What have I cooked out of that book I got?"},
}, {
	pool: []string{"dog rescue centre", "repair café", "hospice shop", "toy library", "night shelter", "refugee drop-in"},
	say: []string{"Did a shift at the {v} this afternoon, I always leave in a better mood.",
		"Signed up to help at the {v} once a month, first go was today.",
		"Spent my volunteering day from work at the {v}, highly recommend."},
	neg: []string{"{p} did a shift at the {v} this afternoon.",
		"{p} signed up to help at the {v} once a month.",
		"{p} spent her volunteering day at the {v}."},
	ask: []string{"Where have I been volunteering?", "Which good causes have I given my time to?"},
}}

// In heldOut3Update, neg[i] mirrors update[i]. An update may name the old
// value as {o}.
var heldOut3Update = []factTemplate{{
	pool: []string{"Brightwell Logistics", "Halcyon Health", "Corvid Analytics", "Tessellate Design", "Pinecrest Insurance", "Ferrous Engineering", "Marlow Beverages"},
	say:  []string{"I've been at {v} for three years now, it's fine, the people are nice.", "Another week at {v}. The coffee machine there is the best thing about it."},
	update: []string{"Handed in my notice today. From the first of the month my email signature says {v}.",
		"Last day at {o} was yesterday; next week I start at {v}.",
		"New lanyard, new laptop, new commute: I'm with {v} now.",
		"Signed the contract with {v}. Leaving {o} felt strange after all that time.",
		"They made me an offer I couldn't refuse, so I've gone to {v}."},
	neg: []string{"{p} handed in her notice. From next month her email signature says {v}.",
		"{p}'s last day at her old place was yesterday; next week she starts at {v}.",
		"New lanyard, new laptop for {p}: she's with {v} now.",
		"{p} signed the contract with {v}.",
		"They made {p} an offer she couldn't refuse, so she's gone to {v}."},
	ask: []string{"Who do I work for at the moment?", "Which company am I employed by now?", "Where do I work these days?"},
}, {
	pool: []string{"number 38 bus", "Northern line", "Metrolink tram", "river bus", "Elizabeth line", "park and ride"},
	say:  []string{"The {v} was rammed again, I had someone's elbow in my ear for forty minutes.", "Stuck on the {v} with no signal, so I'm writing this offline."},
	update: []string{"The office moved, so I've ditched the {o} and get the {v} in now.",
		"New commute starts this week: the {v}, door to desk in half an hour.",
		"I'm on the {v} every morning these days, it's so much calmer.",
		"No more {o} for me, I've switched to the {v} and I get a seat.",
		"Worked out a better route to the office: the {v}, with a coffee stop."},
	neg: []string{"{p}'s office moved, so she gets the {v} in now.",
		"{p}'s new commute starts this week: the {v}.",
		"{p} is on the {v} every morning these days.",
		"{p} has switched to the {v} and she gets a seat.",
		"{p} worked out a better route to her office: the {v}."},
	ask: []string{"How do I get to work now?", "What's my commute these days?"},
}, {
	pool: []string{"five-a-side", "padel", "kabaddi", "canoe polo", "sepak takraw", "quadball", "touch rugby"},
	say:  []string{"Every week I play {v}, it's the only exercise I actually enjoy.", "Sore from {v} again, I'm too old for this."},
	update: []string{"I've packed in {o}; my weekly game is {v} now and my knees are grateful.",
		"Joined a {v} club this month. Three sessions in and I'm hooked.",
		"My new weekly thing is {v}. Turns out I'm not bad at it.",
		"Gave up on {o} after the injury. These days I play {v} instead.",
		"Signed up for the {v} league, first match next week."},
	neg: []string{"{p} has packed in her old sport; her weekly game is {v} now.",
		"{p} joined a {v} club this month.",
		"{p}'s new weekly thing is {v}.",
		"{p} gave up after her injury. These days she plays {v} instead.",
		"{p} signed up for the {v} league."},
	ask: []string{"What sport am I playing these days?", "What do I do for exercise now?", "What have I been doing for sport lately?"},
}, {
	pool: []string{"Payments", "Identity", "Data Platform", "Fraud", "Checkout", "Integrations", "Partnerships"},
	say:  []string{"Sprint planning with the {v} team ran over again.", "Being on {v} means I'm on call every other week."},
	update: []string{"Reorg news: as of this week I report into {v}.",
		"They moved me off {o} and onto {v}, new manager and everything.",
		"I'm officially part of {v} now, I moved desks yesterday.",
		"After a year on {o} I asked for a change, and {v} said yes.",
		"First standup with my new squad, {v}, went surprisingly well."},
	neg: []string{"Reorg news for {p}: as of this week she reports into {v}.",
		"They moved {p} onto {v}, new manager and everything.",
		"{p} is officially part of {v} now, she moved desks yesterday.",
		"{p} asked for a change, and {v} said yes.",
		"{p} had her first standup with her new squad, {v}."},
	ask: []string{"Which team am I in now?", "Who's my team at work after the reshuffle?"},
}, {
	pool: []string{"Estonian", "Basque", "Tagalog", "Maltese", "Finnish", "Catalan", "Latvian"},
	say:  []string{"Day eighty of my {v} streak on the app!", "My {v} teacher says my accent is improving."},
	update: []string{"I've dropped {o} and started {v} instead; we've booked a long trip there next year.",
		"New language project: {v}. The app streak starts again from zero.",
		"Swapped {o} for {v} on the app, the grammar is kinder.",
		"My evening class is {v} now, I couldn't resist.",
		"Enrolled in {v} lessons at the community centre, first one is tonight."},
	neg: []string{"{p} dropped her old language and started {v}; she's booked a long trip next year.",
		"{p}'s new language project is {v}.",
		"{p} swapped to {v} on the app.",
		"{p}'s evening class is {v} now.",
		"{p} enrolled in {v} lessons at the community centre."},
	ask: []string{"Which language am I learning now?", "What am I studying on my language app at the moment?"},
}}

var heldOut3Abstention = []factTemplate{{
	pool:   []string{"Leith", "Headingley", "Jesmond", "Didsbury", "Stokes Croft"},
	say:    []string{"My old flatmate just opened a bakery in {v}, the queue goes round the block."},
	ask:    []string{"What's the name of my {a}'s restaurant?"},
	absent: []string{"second cousin", "au pair", "foster brother", "childminder"},
}, {
	pool:   []string{"shredder", "franking machine", "coffee machine", "badge reader", "water cooler"},
	say:    []string{"The {v} at the office has been broken for a week and nobody cares."},
	ask:    []string{"Who fixed the {a} at my office?"},
	absent: []string{"vending machine", "photocopier", "air conditioning", "projector"},
}, {
	pool:   []string{"Tough Mudder", "century ride", "swimrun", "charity abseil"},
	say:    []string{"I'm training for a {v} in the autumn, wish me luck."},
	ask:    []string{"What was my time in the {a} I did?"},
	absent: []string{"ultramarathon", "duathlon", "fell race", "steeplechase"},
}, {
	pool:   []string{"trampoline", "paddling pool", "climbing frame", "sandpit"},
	say:    []string{"We're thinking about getting a {v} for the kids this summer."},
	ask:    []string{"What did we call our {a}?"},
	absent: []string{"corn snake", "hermit crab", "stick insect", "degu"},
}, {
	pool:   []string{"monitor arm", "footrest", "kneeling chair", "second monitor", "laptop stand"},
	say:    []string{"Work finally approved my request for a {v}, my back thanks them."},
	ask:    []string{"How much did my {a} cost?"},
	absent: []string{"soup maker", "drum machine", "label printer", "pressure washer"},
}}

// Phrase pools of the third held-out part's temporal questions,
// "key|phrase" as in the other parts.
var (
	heldOut3Mornings = []string{"boot camp|dragged myself to a boot camp class in the drizzle", "forty lengths|swam forty lengths at the leisure centre",
		"hepatitis jab|got my hepatitis jab at the pharmacy", "car boot sale|sold half the loft at a car boot sale", "groomer|took the dog to the groomer",
		"spin class|did a spin class before work", "phone screen|had a phone screen with a recruiter"}
	heldOut3Weekdays = []string{"life drawing|went to a life drawing class", "axe throwing|went axe throwing with the team", "hackathon|stayed late for the hackathon",
		"school assembly|watched my son's school assembly", "puncture|fixed a puncture on the bike", "skip hire|sorted out skip hire for the rubble", "tasting menu|had a tasting menu for my partner's birthday"}
	heldOut3LastMonths = []string{"sponsored walk|did a sponsored walk for the hospice", "stag do|survived my friend's stag do", "tonsils|had my tonsils out",
		"jury service|did two weeks of jury service", "house-sitting|went house-sitting for my aunt", "beehive|took over a beehive from a neighbour", "kitchen extension|got the kitchen extension signed off"}
	heldOut3Plans = []string{"mortgage meeting|a mortgage meeting at the bank", "naturalisation ceremony|my naturalisation ceremony", "mid-year review|my mid-year review",
		"naming day|my niece's naming day", "theory test|my driving theory test", "tree surgeon|the tree surgeon coming", "open day|a university open day with my eldest"}
)

// heldOut3Ordinal is how the part says a day of the month: 1st, 2nd, 21st.
func heldOut3Ordinal(d int) string {
	suffix := "th"
	if d%100 < 11 || d%100 > 13 {
		switch d % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", d, suffix)
}

// heldOut3Date is how the part's questions name a day: "Thursday the 21st
// of April".
func heldOut3Date(t time.Time) string {
	return fmt.Sprintf("%s the %s of %s", t.Weekday(), heldOut3Ordinal(t.Day()), t.Month())
}

// plantHeldOut3Temporal plants k temporal-reasoning questions of the third
// held-out part, each of a different kind: "this morning", asked the next
// day as "yesterday morning"; "on Tuesday" (a weekday earlier the same
// week), asked by its date; "last month", asked by the month's name; and a
// plan "on the 21st", asked by its date afterwards. Each has a distractor
// phrased the same way in another session, on another day or month, so
// only the date arithmetic tells them apart.
func (g *bankGen) plantHeldOut3Temporal(k int) {
	n := len(g.sessions)
	day := func(s int) time.Time { return g.sessions[s].start.Truncate(24 * time.Hour) }
	other := func(s int) (int, bool) {
		if n < 2 {
			return 0, false
		}
		return g.sessionIn(0, n, s), true
	}
	planted := 0
	for _, kind := range g.order(4) {
		if planted == k {
			return
		}
		switch kind {
		case 0: // "this morning", asked the next day
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOut3Mornings))
			say := []string{"This morning I {v}, and now I need a second breakfast.", "I {v} this morning, so I'm officially allowed to be smug today."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			if o, ok := other(s); ok && !day(o).Equal(day(s)) {
				_, x := splitKey(g.draw(heldOut3Mornings))
				g.userSays(o, fill("This morning I {v}, not sure I'd do it again.", "v", x), false)
			}
			asks := []string{"What did I do yesterday morning?", "What was I up to yesterday before lunch?", "Remind me, how did I start my day yesterday?"}
			g.ask(TypeTemporalReasoning, pick(g.rng, asks), g.sessions[s].start.Add(24*time.Hour), []string{key}, ev)
		case 1: // "on Tuesday": a weekday two to five days before the session
			s := g.sessionIn(0, n)
			back := 2 + g.rng.IntN(4)
			when := day(s).AddDate(0, 0, -back)
			key, phrase := splitKey(g.draw(heldOut3Weekdays))
			say := []string{"On {w} I {v}, which was more fun than I expected.", "Did I tell you? On {w} I {v}."}
			ev := g.userSays(s, fill(pick(g.rng, say), "w", when.Weekday().String(), "v", phrase), true)
			if o, ok := other(s); ok {
				ob := 2 + g.rng.IntN(4)
				if od := day(o).AddDate(0, 0, -ob); !od.Equal(when) {
					_, x := splitKey(g.draw(heldOut3Weekdays))
					g.userSays(o, fill("On {w} I {v}, bit of a disaster.", "w", od.Weekday().String(), "v", x), false)
				}
			}
			asks := []string{"What did I do on {d}?", "Where was I on {d}?", "What happened on {d}? I've forgotten already."}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", heldOut3Date(when)), g.end(), []string{key}, ev)
		case 2: // "last month", asked by the month's name
			s := g.sessionIn(0, n)
			first := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC) }
			month := first(day(s)).AddDate(0, -1, 0)
			key, phrase := splitKey(g.draw(heldOut3LastMonths))
			say := []string{"Last month I {v}, and I'm still recovering.", "I {v} last month, long story, remind me to tell you."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			var others []int
			for i := range g.sessions {
				if !first(day(i)).AddDate(0, -1, 0).Equal(month) {
					others = append(others, i)
				}
			}
			if len(others) > 0 {
				_, x := splitKey(g.draw(heldOut3LastMonths))
				g.userSays(pick(g.rng, others), fill("Last month I {v}. Never again.", "v", x), false)
			}
			asks := []string{"What did I get up to in {m}?", "What was the big thing I did in {m}?", "Anything notable I did in {m}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "m", month.Month().String()), g.end(), []string{key}, ev)
		case 3: // a plan "on the 21st", asked by its date afterwards
			s := g.sessionIn(0, n)
			when := day(s).AddDate(0, 0, 3+g.rng.IntN(12))
			key, phrase := splitKey(g.draw(heldOut3Plans))
			say := []string{"Put it in the diary: {v} on the {n}.", "I've got {v} on the {n}, wish me luck."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase, "n", heldOut3Ordinal(when.Day())), true)
			if o, ok := other(s); ok {
				od := day(o).AddDate(0, 0, 3+g.rng.IntN(12))
				if od.Day() != when.Day() {
					_, x := splitKey(g.draw(heldOut3Plans))
					g.userSays(o, fill("I've got {v} on the {n}, can't get out of it.", "v", x, "n", heldOut3Ordinal(od.Day())), false)
				}
			}
			asks := []string{"What did I have on {d}?", "What was in my diary for {d}?", "What was I booked in for on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", heldOut3Date(when)), g.end(), []string{key}, ev)
		}
		planted++
	}
}

var heldOut3ZhUserNames = []string{"苏晴", "谢文博", "姚思远", "蒋欣然", "沈一凡", "陆子涵"}

var heldOut3ZhPeople = []person{
	{"钟睿", "Zhong Rui", "睿哥"},
	{"罗佳怡", "Luo Jiayi", "佳佳"},
	{"唐明远", "Tang Mingyuan", "唐哥"},
	{"冯晓雯", "Feng Xiaowen", "雯雯"},
	{"韩志诚", "Han Zhicheng", "阿诚"},
	{"曹丽娟", "Cao Lijuan", "娟子"},
	{"邓宇航", "Deng Yuhang", "航航"},
	{"许婧妍", "Xu Jingyan", "妍妍"},
}

var heldOut3CrossLingual = []zhTemplate{{
	pool:  []string{"围棋|Go", "街舞|street dance", "拉丁舞|Latin dance", "机器人编程|robotics", "跆拳道|taekwondo", "马术|horse riding"},
	say:   []string{"{a}给儿子报了个{v}班，每周六上午雷打不动。", "{a}家小朋友学{v}快一年了，最近还拿了个奖。"},
	askEn: []string{"What after-school class did {a} sign the kid up for?"},
	askZh: []string{"{a}的孩子课外在学什么？"},
}, {
	pool:  []string{"地暖|underfloor heating", "新风系统|ventilation system", "扫地机器人|robot vacuum", "净水器|water purifier", "电动窗帘|motorised curtains", "智能门锁|smart lock"},
	say:   []string{"{a}家装修完了，最满意的是装了{v}。", "{a}说自从家里有了{v}，生活质量直线上升。"},
	askEn: []string{"What did {a} put in at home that they're so happy with?"},
	askZh: []string{"{a}家里新添了什么，用着特别满意？"},
}, {
	pool:  []string{"教师资格证|teaching certificate", "司法考试|bar exam", "雅思|IELTS", "托福|TOEFL", "驾照|driving licence", "日语一级|JLPT N1"},
	say:   []string{"{a}这几个月下班就去图书馆，在准备{v}。", "{a}说今年一定要把{v}拿下，书都买了一摞。"},
	askEn: []string{"What exam is {a} preparing for?"},
	askZh: []string{"{a}最近在备考什么？"},
}, {
	pool:  []string{"书店|bookshop", "裁缝店|tailor's shop", "民宿|guesthouse", "理发店|hair salon", "火锅店|hotpot restaurant", "宠物店|pet shop"},
	say:   []string{"{a}辞职自己开了一家{v}，开业那天排了好长的队。", "{a}盘下了一个小门面，准备开{v}。"},
	askEn: []string{"What kind of business did {a} open?"},
	askZh: []string{"{a}辞职以后开了个什么店？"},
}, {
	pool:  []string{"冰岛|Iceland", "新西兰|New Zealand", "摩洛哥|Morocco", "土耳其|Turkey", "越南|Vietnam", "埃及|Egypt"},
	say:   []string{"{a}下个月要去{v}度假，攻略做了好几页。", "{a}的年假定了，去{v}玩十天。"},
	askEn: []string{"Where is {a} going on holiday?"},
	askZh: []string{"{a}打算去哪儿旅游？"},
}, {
	pool:  []string{"建筑|architecture", "护理|nursing", "考古|archaeology", "统计|statistics", "药学|pharmacy", "心理学|psychology"},
	say:   []string{"{a}的女儿考上了大学，读{v}专业。", "{a}家孩子最后选了{v}，说是从小的梦想。"},
	askEn: []string{"What is {a}'s daughter going to study?"},
	askZh: []string{"{a}的孩子大学读的是什么？"},
}, {
	pool:  []string{"钩针|crochet", "乐高|Lego", "剧本杀|murder mystery games", "沙画|sand painting", "冥想|meditation", "手账|journaling"},
	say:   []string{"{a}最近迷上了{v}，一有空就琢磨这个。", "{a}说{v}是今年新找到的解压方式。"},
	askEn: []string{"What new hobby has {a} got into?"},
	askZh: []string{"{a}最近迷上了什么爱好？"},
}}

var heldOut3FillerEN = [][2]string{
	{"Back-to-back meetings all afternoon, I've barely had a sip of water.", "Oof. Even two minutes between calls helps, if you can sneak them in."},
	{"Remind me later that I still have to {j}.", "Will do. Want me to bring it up again at the end of the day?"},
	{"I've been putting off having to {j} for weeks.", "That's very human. Could you do just the first step of it this evening?"},
	{"Lunch was {m} eaten over the keyboard.", "Not glamorous, but it counts. Maybe step away from the screen for the next one."},
	{"Dinner's going to be {m}, I can't face cooking.", "Sometimes that's exactly the right call."},
	{"We started {b} last night and it's oddly gripping.", "Those are often the best finds. Are you going to race through the rest?"},
	{"Any tips for staying awake in a two-hour budget review?", "Sit upright, keep water nearby and jot down questions as you go; it keeps you engaged."},
	{"My laptop decided to install updates right before a call.", "Classic timing. Scheduling updates for overnight can stop it happening again."},
	{"The kids have an inset day tomorrow and I completely forgot.", "Ah, that's a juggle. Could anyone swap with you or help with pickup?"},
	{"It's bucketing down here and my umbrella turned inside out.", "Ugh, sorry. Hopefully it blows over by home time."},
	{"Honestly I just need a nap.", "Twenty minutes can work wonders if you can get it."},
	{"The motion sensor light in the hallway keeps flickering.", "Could be the bulb or the sensor; swapping the bulb is the cheap first test."},
	{"My inbox is at four hundred unread.", "Try sorting by sender and archiving the newsletters in one go; it shrinks fast."},
	{"Cleared my whole to-do list for the week!", "That's a great feeling. Enjoy it."},
	{"Can you help me word an out-of-office message?", "Sure: 'I'm away this week with limited access to email; for anything urgent, please contact the team inbox.'"},
	{"Someone microwaved fish in the office kitchen again.", "The eternal office crime. A polite note by the microwave might help."},
	{"Did ten thousand steps today without even trying.", "Nice, all those little trips add up."},
	{"My neighbour's wind chimes are driving me up the wall.", "That's tough, especially at night. A friendly word might go further than you'd think."},
	{"Is it rude to leave a group chat?", "Not if you do it quietly; most people won't even notice."},
}

var heldOut3FillerSlots = map[string][]string{
	"j": {"chase the plumber's invoice", "update my CV", "clear out the shed", "cancel the magazine subscription", "reply to the school's email", "rehang the bathroom mirror"},
	"m": {"leftover risotto", "a cheese toastie", "crisps and an apple", "a bowl of pho", "cold pizza", "last night's curry"},
	"b": {"a podcast about the Tudors", "a thriller set in Norway", "a documentary about octopuses", "a sitcom from the nineties", "a dating show from Australia"},
}

var heldOut3AcksEN = []string{
	"Thanks for filling me in.",
	"Got it, I'll bear that in mind.",
	"Oh, interesting!",
	"Understood, thanks.",
	"Fair enough!",
	"Ah, I'll remember that.",
	"Thanks, that's useful to know.",
	"Okay, noted down.",
}

var heldOut3FillerZH = [][2]string{
	{"今天开了一上午的会，脑子都转不动了。", "辛苦了，中午记得出去走走透透气。"},
	{"地铁又晚点了，差点迟到。", "早高峰确实难熬，下次可以提前十分钟出门。"},
	{"晚上不知道吃什么，好纠结。", "冰箱里有什么就做什么吧，简单点也不错。"},
	{"孩子明天要交手工作业，我还没开始弄。", "今晚一起动手，说不定还挺好玩的。"},
	{"最近总是睡不好，半夜醒好几次。", "睡前少看手机，可能会好一些。"},
	{"周末想在家躺平，哪儿也不去。", "偶尔休息一下很有必要。"},
	{"老板突然让我下周做汇报。", "先列个提纲，慢慢准备，来得及。"},
	{"楼下开了一家面包店，闻着好香。", "有空去尝尝，说不定会成为你的新宠。"},
	{"快递又送错地方了。", "可以联系一下配送站，一般很快能找回来。"},
	{"今天下大雨，鞋子全湿了。", "回家赶紧换双干的，别着凉了。"},
	{"我妈又在家族群里发养生文章了。", "哈哈，这大概是长辈表达关心的方式。"},
	{"加班到九点，终于把报表做完了。", "太不容易了，早点休息。"},
}

var heldOut3AcksZH = []string{"好的，我记下了。", "听起来不错呀！", "原来如此。", "恭喜恭喜！", "嗯嗯，知道啦。"}

// heldOut3Vocabulary is the third held-out part. Its sessions begin in
// the spring of 2022, before every other part's.
var heldOut3Vocabulary = vocabulary{
	part:         PartHeldOut3,
	bankPrefix:   "held3",
	stream:       heldOut3Stream,
	start:        time.Date(2022, time.March, 7, 0, 0, 0, 0, time.UTC),
	userNames:    heldOut3UserNames,
	otherPeople:  heldOut3OtherPeople,
	ssu:          heldOut3SSU,
	ssa:          heldOut3SSA,
	ssp:          heldOut3SSP,
	multi:        heldOut3Multi,
	update:       heldOut3Update,
	abstention:   heldOut3Abstention,
	temporal:     (*bankGen).plantHeldOut3Temporal,
	zhUserNames:  heldOut3ZhUserNames,
	zhPeople:     heldOut3ZhPeople,
	crossLingual: heldOut3CrossLingual,
	fillerEN:     heldOut3FillerEN,
	fillerZH:     heldOut3FillerZH,
	fillerSlots:  heldOut3FillerSlots,
	acksEN:       heldOut3AcksEN,
	acksZH:       heldOut3AcksZH,
}
