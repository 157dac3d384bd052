package eval

import "time"

// The second held-out part (PartHeldOut2). It was written blind, in one
// sitting, by a writer who had seen no result of memstream's recall on any
// part (no report, no misses file), from general knowledge of how people
// chat with an assistant about their lives, and it is never tuned
// against: its misses are not written out. Its names, values, phrasings,
// situations, filler and time expressions ("last night", "the day before
// yesterday", "tomorrow", "in n days", all asked by calendar date) are
// its own, shared with neither the tuning nor the held-out part, and its
// sessions happen in 2023. Its knowledge updates say the new value in
// several ways: some share no word with the question, some name the old
// value ({o}), some take two sentences. The same rules as the other
// tables apply: pool values are not substrings of one another or of the
// filler, a hard negative mirrors the evidence it competes with
// (TestGoldOnlyInEvidence, TestHardNegativesExist).

var heldOut2UserNames = []string{"Agnes", "Lorcan", "Isadora", "Obi", "Marguerite", "Levi", "Soraya", "Piotr", "Beatrix", "Kenji", "Fiona", "Rashid", "Odile", "Anouk", "Clara", "Benedikt"}

var heldOut2OtherPeople = []string{"Maelle", "Ravindra", "Lucia", "Nils", "Rhiannon", "Sanjay", "Ulrike", "Wendell", "Torsten", "Philippa"}

var heldOut2SSU = []factTemplate{{
	pool: []string{"the Tin Man", "Captain Hook", "the Cheshire Cat", "the Big Bad Wolf", "Willy Wonka", "the Snow Queen", "Long John Silver"},
	say: []string{"Proud parent moment: my daughter got cast as {v} in the school play and she's been rehearsing in the bath.",
		"The cast list went up today and my girl is playing {v}! I have to make the costume, help."},
	neg: []string{"{p}'s daughter got cast as {v} in the school play, she's been rehearsing nonstop.",
		"The cast list went up at {p}'s school and her girl is playing {v}."},
	ask: []string{"What role did my daughter land in the school production?", "Who is my kid playing on stage this term?"},
}, {
	pool: []string{"birch pollen", "dust mites", "mustard seed", "wasp stings", "lupin flour", "nickel"},
	say: []string{"Got the results from the allergy clinic: it's {v}. That explains a lot, honestly.",
		"So the skin-prick test lit up for {v}, which means I need to read every label from now on."},
	neg: []string{"{p} got her results from the allergy clinic, it's {v} for her.",
		"{p}'s skin-prick test lit up for {v}, she has to read every label now."},
	ask: []string{"What am I allergic to, according to the tests?", "Which allergy was I diagnosed with?"},
}, {
	pool: []string{"compass", "swallow", "paper crane", "fern leaf", "crescent moon", "tiny anchor"},
	say: []string{"I did it, I got my first tattoo! A little {v} on the inside of my wrist.",
		"Sat in the tattoo chair for forty minutes today and walked out with a {v} on my ankle. No regrets."},
	neg: []string{"{p} got her first tattoo, a little {v} on the inside of her wrist.",
		"{p} sat in the tattoo chair for an hour and walked out with a {v} on her shoulder."},
	ask: []string{"What design did I have inked on me?", "What picture is my tattoo of?"},
}, {
	pool: []string{"coal miner", "train driver", "watchmaker", "ship's carpenter", "postman", "tram conductor"},
	say: []string{"Found a box of my grandad's old payslips. He worked as a {v} for nearly forty years.",
		"My grandfather was a {v} his whole life, and he still tells the same three stories about it."},
	neg: []string{"{p}'s grandad worked as a {v} for nearly forty years, she found his old payslips.",
		"{p}'s grandfather was a {v} his whole life, she says he tells the same stories."},
	ask: []string{"What was my grandpa's trade?", "What did my grandfather do for a living?"},
}, {
	pool: []string{"urban planning", "epidemiology", "medieval history", "actuarial science", "soil science", "game design"},
	say: []string{"Enrolment is done, I'm officially doing a part-time master's in {v} starting this autumn.",
		"Handed in my first essay for the {v} master's, evenings are going to be busy for two years."},
	neg: []string{"{p} is officially doing a part-time master's in {v} starting this autumn.",
		"{p} handed in her first essay for her {v} master's."},
	ask: []string{"What subject is my postgraduate course in?", "What am I studying for my graduate degree?"},
}}

var heldOut2SSA = []factTemplate{{
	pool: []string{"parlour palm", "Chinese evergreen", "maidenhair fern", "prayer plant", "rubber fig", "Boston fern"},
	req: []string{"My flat gets almost no sun and I kill every plant I buy. What could actually survive?",
		"Looking for a houseplant that can live in a gloomy north-facing bedroom."},
	say: []string{"Go for a {v}; it copes with low light and forgives you if you forget to water it.",
		"A {v} is about as unkillable as houseplants get, and it's happy in a dim corner."},
	negReq: []string{"{p} wants a plant for her sunny kitchen windowsill.",
		"{p} is after a plant for her office desk."},
	neg: []string{"For a sunny sill, go for a {v}; it copes well and forgives missed watering.",
		"For the office a {v} is about as unkillable as houseplants get."},
	ask: []string{"Which plant did you recommend for my dark flat?", "What greenery did you suggest for the room with no light?"},
}, {
	pool: []string{"Albariño", "Chianti", "Riesling", "Malbec", "Grüner Veltliner", "Barolo"},
	req: []string{"I'm doing slow-roast lamb for eight on Saturday, what should I pour with it?",
		"Which bottle goes with a lamb shoulder? I want to look like I know what I'm doing."},
	say: []string{"{v} would be lovely with that, it stands up to the richness without overpowering it.",
		"Pick up a couple of bottles of {v}; it's a classic match and your guests will be impressed."},
	negReq: []string{"{p} is serving grilled sea bass at her dinner party.",
		"{p} wants a bottle to bring to a curry night."},
	neg: []string{"{v} would be lovely with the sea bass, it doesn't overpower the fish.",
		"For the curry, pick up a couple of bottles of {v}; it's a classic match."},
	ask: []string{"What wine did you say I should serve with the lamb?", "Which bottle did you pick for my roast dinner?"},
}, {
	pool: []string{"doorway chest stretch", "seated spinal twist", "thread the needle", "knee-to-chest hug", "seated forward fold", "sphinx pose"},
	req: []string{"My lower back is killing me after a week hunched over the laptop.",
		"Eight hours at a desk and my back feels like concrete. Anything quick I can do?"},
	say: []string{"Try the {v}: a minute or two, morning and evening, usually eases desk stiffness.",
		"The {v} is a good one for that; move slowly and breathe into it."},
	negReq: []string{"{p} gets tight hips from cycling to work.",
		"{p} has a stiff neck after a long flight."},
	neg: []string{"Try the {v}: a minute or two after each ride usually eases tight hips.",
		"The {v} is a good one for a stiff neck; move slowly and breathe."},
	ask: []string{"Which stretch did you suggest for my sore back?", "What exercise did you give me for my aching spine?"},
}, {
	pool: []string{"Paddington 2", "The Grand Budapest Hotel", "Spirited Away", "Hunt for the Wilderpeople", "Knives Out", "Amélie"},
	req: []string{"My in-laws are staying this weekend and we need one film all four of us will enjoy.",
		"What's a safe movie for a night in with my very proper mother-in-law?"},
	say: []string{"You can't go wrong with {v}: funny, warm, and nothing awkward to sit through together.",
		"I'd put on {v}. It charms pretty much every generation."},
	negReq: []string{"{p} wants a film for her teenage son's sleepover.",
		"{p} needs something to watch on a cosy date night."},
	neg: []string{"For a sleepover you can't go wrong with {v}: funny and warm.",
		"For date night I'd put on {v}. It charms pretty much everyone."},
	ask: []string{"Which movie did you suggest for the evening with my husband's parents?", "What film did you pick for the family visit?"},
}, {
	pool: []string{"a zero-based budget", "the 50/30/20 rule", "cash envelopes", "a sinking fund", "pay-yourself-first"},
	req: []string{"Every month my salary just evaporates and I don't know where it goes. How do I get a grip?",
		"I want to start saving properly this year, what method should I use?"},
	say: []string{"Start with {v}; it's simple enough to stick with and shows you exactly where the leaks are.",
		"A lot of people have success with {v}. Give it three months before you judge it."},
	negReq: []string{"{p} wants to save up for a wedding.",
		"{p} is trying to pay off a credit card."},
	neg: []string{"For the wedding, start with {v}; it's simple enough to stick with.",
		"For the card, a lot of people have success with {v}."},
	ask: []string{"What approach to money did you recommend to me?", "What saving strategy did you tell me to try?"},
}}

var heldOut2SSP = []factTemplate{{
	pool: []string{"oat flat white", "iced americano", "double macchiato", "piccolo latte", "London fog"},
	say: []string{"Every morning it's the same order for me: {v}, and a bad one ruins my whole day.",
		"nothing gets me going like my {v}, I'm a creature of habit"},
	neg: []string{"Every morning it's the same order for {p}: {v}, a bad one ruins her day.",
		"nothing gets {p} going like her {v}, she's a creature of habit"},
	ask: []string{"I'm doing the café run for the team, what should I get for myself?", "Grab me something from the coffee cart on your way, you know what I like?"},
}, {
	pool: []string{"lo-fi beats", "film scores", "Gregorian chant", "ambient drone", "bossa nova"},
	say: []string{"I can only concentrate with {v} in my headphones, anything with words kills my focus.",
		"Honestly {v} is the only background music that helps me get work done."},
	neg: []string{"{p} can only concentrate with {v} in her headphones.",
		"{p} says {v} is the only background music that helps her get work done."},
	ask: []string{"Put together a playlist for my long day of writing.", "What should I listen to while I grind through this report?"},
}, {
	pool: []string{"farm stays", "houseboats", "glamping pods", "mountain huts", "lighthouse cottages"},
	say: []string{"Hotels feel so soulless to me, I'd always pick {v} if I can find one.",
		"We've got into {v} lately, waking up somewhere odd is half the fun."},
	neg: []string{"Hotels feel soulless to {p}, she'd always pick {v}.",
		"{p} has got into {v} lately, she says waking up somewhere odd is half the fun."},
	ask: []string{"Find me somewhere to stay for a long weekend in the countryside.", "Where should I sleep on my trip to the coast?"},
}, {
	pool: []string{"sticky toffee pudding", "tiramisu", "lemon tart", "pistachio gelato", "crème brûlée"},
	say: []string{"I never skip dessert, and if {v} is on the menu the decision is already made.",
		"My weakness is {v}, I'll order it every single time."},
	neg: []string{"{p} never skips dessert, if {v} is on the menu she's decided.",
		"{p}'s weakness is {v}, she orders it every single time."},
	ask: []string{"We're at the restaurant and the sweet menu just arrived, what should I have?", "Help me choose an afters for tonight."},
}, {
	pool: []string{"kung fu classics", "heist capers", "French new wave", "animated musicals", "nature documentaries"},
	say: []string{"For a night on the sofa I always end up reaching for {v}, I've seen most of them twice.",
		"Give me {v} over a blockbuster any day."},
	neg: []string{"For a night on the sofa {p} always reaches for {v}.",
		"{p} says give her {v} over a blockbuster any day."},
	ask: []string{"Pick something for me to watch this evening.", "I've got the house to myself tonight, what should I put on?"},
}}

var heldOut2Multi = []factTemplate{{
	pool: []string{"Gothenburg", "Poznań", "Bilbao", "Da Nang", "Winnipeg", "Hobart", "Antwerp", "Izmir"},
	say: []string{"Just landed in {v} for the sales conference, the hotel is surprisingly nice.",
		"Work has sent me to {v} for three days of client meetings, I barely saw daylight.",
		"Back from the {v} trade fair, my suitcase is full of brochures."},
	neg: []string{"{p} just landed in {v} for the sales conference.",
		"Work has sent {p} to {v} for three days of client meetings.",
		"{p} is back from the {v} trade fair with a suitcase of brochures."},
	ask: []string{"Where have my business trips taken me?", "Which places has work flown me to?"},
}, {
	pool: []string{"broad beans", "leeks", "cavolo nero", "butternut squash", "beetroot", "sweet peas", "rhubarb", "garlic"},
	say: []string{"Spent the afternoon on my knees putting in {v}, the allotment is finally taking shape.",
		"The {v} went into the raised bed this morning, fingers crossed the slugs leave them alone.",
		"Planted a whole row of {v} today, my back is not thanking me."},
	neg: []string{"{p} spent the afternoon putting in {v} at her allotment.",
		"{p}'s {v} went into her raised bed this morning.",
		"{p} planted a whole row of {v} today."},
	ask: []string{"What have I sown in the garden this year?", "List what I've planted at the allotment."},
}, {
	pool: []string{"Stoner", "Kindred", "Frankenstein", "Gilead", "Possession", "Wolf Hall", "Hamnet", "Shuggie Bain"},
	say: []string{"Finished {v} on the bus this morning and nearly missed my stop.",
		"Stayed up till one to get through the last chapters of {v}.",
		"Book club pick this month was {v} and I actually read all of it."},
	neg: []string{"{p} finished {v} on the bus and nearly missed her stop.",
		"{p} stayed up till one to get through the last chapters of {v}.",
		"{p}'s book club pick this month was {v}, she skipped the meeting."},
	ask: []string{"Which novels have I finished reading?", "What books have I got through recently?"},
}, {
	pool: []string{"Anselm", "Berenike", "Casimir", "Dagny", "Eamon", "Florentyna", "Gideon", "Hollis"},
	say: []string{"Went to the climbing wall with {v} after work, my forearms are completely dead.",
		"{v} talked me into another climbing session, I managed the purple route!",
		"Had a climbing session with {v} on Sunday, we stayed until they closed."},
	neg: []string{"{p} went to the climbing wall with {v} after work.",
		"{v} talked {p} into another climbing session.",
		"{p} had a climbing session with {v} on Sunday."},
	ask: []string{"Who have I gone climbing with?", "Which friends have I climbed with lately?"},
}, {
	pool: []string{"bookbinding", "candle making", "woodturning", "screen printing", "cheese making", "silversmithing", "stained glass", "leather tooling"},
	say: []string{"Did a {v} workshop today and came home with something wonky but mine.",
		"The {v} taster class was brilliant, the tutor had endless patience.",
		"Booked myself onto a one-day {v} course as a treat, and it was worth it."},
	neg: []string{"{p} did a {v} workshop and came home with something wonky.",
		"{p} says the {v} taster class was brilliant.",
		"{p} booked herself onto a one-day {v} course."},
	ask: []string{"What craft workshops have I taken?", "Which hands-on classes have I tried?"},
}}

// In heldOut2Update, neg[i] mirrors update[i]. An update may name the old
// value as {o}, the way people say "moved from X to Y".
var heldOut2Update = []factTemplate{{
	pool: []string{"Plymouth", "Bristol", "Cardiff", "Brighton", "Norwich", "Sheffield", "Exeter"},
	say:  []string{"I've lived in {v} for about six years now and I still get lost.", "Rent in {v} keeps going up, but I love it here."},
	update: []string{"The removal van came on Thursday, so {v} is home now.",
		"We left {o} behind last month. It's {v} for us now, and the flat is twice the size.",
		"Signed the lease yesterday. From next week my address is in {v}.",
		"New flat, new city: {v}! Still living out of boxes.",
		"Goodbye {o}, hello {v} — the move is finally done."},
	neg: []string{"The removal van came for {p} on Thursday, so {v} is her home now.",
		"{p} left her old town behind last month. It's {v} for her now.",
		"{p} signed the lease yesterday. From next week her address is in {v}.",
		"New flat, new city for {p}: {v}! She's still living out of boxes.",
		"{p} said goodbye to her old place, hello {v} — her move is done."},
	ask: []string{"Which city do I live in now?", "Where's home for me these days?", "What town am I based in at the moment?"},
}, {
	pool: []string{"Honda Jazz", "Mazda MX-5", "Renault Zoe", "Fiat Panda", "Peugeot 208", "Dacia Duster", "Mini Countryman"},
	say:  []string{"I drive a {v}, nothing fancy but it gets me about.", "My {v} needs new tyres again."},
	update: []string{"Traded in the {o} and came home with a {v}.",
		"Picked up the keys to my {v} this morning and it still smells new.",
		"The old motor failed its MOT. So I'm now the proud owner of a {v}.",
		"Sold it. What sits on my drive now is a {v}.",
		"Finally replaced the {o}; the {v} is so much nicer on the motorway."},
	neg: []string{"{p} traded in her hatchback and came home with a {v}.",
		"{p} picked up the keys to her {v} this morning.",
		"{p}'s old motor failed its MOT. So she's the proud owner of a {v}.",
		"{p} sold hers. What sits on her drive now is a {v}.",
		"{p} finally replaced her runabout; her {v} is much nicer on the motorway."},
	ask: []string{"What car do I drive now?", "What am I driving these days?", "Which vehicle do I currently own?"},
}, {
	pool: []string{"Cordelia", "Leopold", "Mirabel", "Quentin", "Ignatius", "Thaddeus", "Winifred"},
	say:  []string{"My boss {v} wants the quarterly report by Friday, as usual.", "Had my review with {v}, my manager, and it went fine."},
	update: []string{"{o} left the company, so now I report to {v}.",
		"Reorg news: my new line manager is {v}.",
		"I have a new boss called {v}. First impressions are good.",
		"Had my first one-to-one with {v}, who took over the team on Monday.",
		"Different name on my appraisal form this year: {v}."},
	neg: []string{"{p}'s manager left, so now she reports to {v}.",
		"Reorg news for {p}: her new line manager is {v}.",
		"{p} has a new boss called {v}. Her first impressions are good.",
		"{p} had her first one-to-one with {v}, who took over her team.",
		"Different name on {p}'s appraisal form this year: {v}."},
	ask: []string{"Who is my manager now?", "Who do I report to at work these days?", "Who's in charge of me at the office currently?"},
}, {
	pool: []string{"St Aidan's Primary", "Larkfield Academy", "Hollybrook School", "Marsh Lane Primary", "Oakridge Juniors", "Fernhill Primary"},
	say:  []string{"My son's at {v}, he's in Year 3 and loves his teacher.", "Pickup at {v} is chaos with all the parked cars."},
	update: []string{"He's moved schools: it's {v} from this term.",
		"We took him out of {o}. He started at {v} on Monday and came home grinning.",
		"New uniform, new book bag, new gates at half eight: {v}.",
		"The transfer came through. {v} had a place for him after half-term.",
		"No more {o} run in the mornings; {v} is a five-minute walk."},
	neg: []string{"{p}'s daughter has moved schools: it's {v} from this term.",
		"{p} took her girl out of her old class. She started at {v} on Monday.",
		"New uniform, new book bag for {p}'s daughter: {v}.",
		"{p}'s transfer came through. {v} had a place for her daughter after half-term.",
		"No more long run in the mornings for {p}; {v} is a five-minute walk."},
	ask: []string{"Which school does my son attend now?", "Where is my boy at school these days?", "What school is my lad enrolled in at the moment?"},
}, {
	pool: []string{"Hartwell & Co", "Bluefin Analytics", "Copperleaf Studio", "Northgate Insurance", "Saltmarsh Brewing", "Tidewater Labs"},
	say:  []string{"I've been at {v} since I graduated, it's comfortable.", "Another late night at {v}, the deadlines never stop."},
	update: []string{"Handed in my notice and accepted an offer from {v}.",
		"Last day at {o} was Friday. On Monday I start at {v}.",
		"New badge, new desk: I'm with {v} now.",
		"Signed the contract with {v} and the first week went great.",
		"Left {o} after all those years; {v} made me an offer I couldn't refuse."},
	neg: []string{"{p} handed in her notice and accepted an offer from {v}.",
		"{p}'s last day at her old firm was Friday. On Monday she starts at {v}.",
		"New badge, new desk for {p}: she's with {v} now.",
		"{p} signed the contract with {v} and her first week went great.",
		"{p} left her old firm after all those years; {v} made her an offer."},
	ask: []string{"Where do I work now?", "Which company employs me at the moment?", "Who's my employer these days?"},
}}

var heldOut2Abstention = []factTemplate{{
	pool:   []string{"Aberdeen", "Utrecht", "Leuven", "Trondheim"},
	say:    []string{"My cousin just started at a university in {v}, she phones home every night."},
	ask:    []string{"What is my {a} studying at university?"},
	absent: []string{"nephew", "stepdaughter", "goddaughter", "half-brother"},
}, {
	pool:   []string{"fridge", "extractor fan", "chest freezer", "oven"},
	say:    []string{"The {v} in the kitchen is making a funny grinding noise again."},
	ask:    []string{"When did I buy my {a}?"},
	absent: []string{"sauna", "treadmill", "jacuzzi", "chandelier"},
}, {
	pool:   []string{"first aid", "public speaking", "bookkeeping", "Excel macros"},
	say:    []string{"I'm halfway through an evening course on {v}, homework every week."},
	ask:    []string{"Who teaches my {a} course?"},
	absent: []string{"scuba diving", "origami", "glass engraving", "ventriloquism"},
}, {
	pool:   []string{"engagement", "farewell", "christening", "murder-mystery"},
	say:    []string{"We're throwing a {v} party at ours on Saturday, I need to buy chairs."},
	ask:    []string{"How many guests are coming to my {a} party?"},
	absent: []string{"divorce", "halloween", "pyjama", "toga"},
}, {
	pool:   []string{"singing", "sailing", "oboe", "canoeing"},
	say:    []string{"My {v} lesson got moved to Thursday, which clashes with everything."},
	ask:    []string{"What's the name of my {a} instructor?"},
	absent: []string{"bobsleigh", "lacrosse", "trapeze", "jiu-jitsu"},
}}

// Phrase pools of the second held-out part's temporal questions,
// "key|phrase" as in the other parts.
var (
	heldOut2Evenings = []string{"pub quiz|went to a pub quiz", "karaoke|sang karaoke until midnight", "ice hockey|watched an ice hockey game",
		"jazz bar|went to a jazz bar", "roller disco|went to a roller disco", "open mic|played at an open mic night", "darts|played darts at the local"}
	heldOut2Errands = []string{"tax return|filed my tax return", "opticians|picked up new glasses from the opticians", "cobbler|took my boots to the cobbler",
		"council tip|took a load of junk to the council tip", "car wash|took the car through the car wash", "post office|queued at the post office to send a parcel"}
	heldOut2Tomorrows = []string{"physio|have my first physio appointment", "tiling|have a man coming to do the bathroom tiling",
		"parents' evening|have parents' evening at the school", "MRI scan|have an MRI scan", "flat viewing|am doing a flat viewing",
		"gas engineer|have the gas engineer coming round"}
	heldOut2Ahead = []string{"wisdom tooth|have my wisdom tooth out", "book launch|go to a friend's book launch",
		"citizenship ceremony|attend my citizenship ceremony", "team offsite|go on the team offsite", "bake sale|run the charity bake sale",
		"orchestra audition|have an orchestra audition"}
	heldOut2DayWords = []string{"", "", "", "three", "four", "five", "six"}
)

// heldOut2Date is how the part's questions name a day.
const heldOut2Date = "Monday 2 January"

// plantHeldOut2Temporal plants k temporal-reasoning questions of the
// second held-out part, each of a different kind, all asked by calendar
// date at the end: "last night" (the evening before the session), "the
// day before yesterday", "tomorrow" and "in n days" (plans). Each has a
// distractor phrased the same way in another session, so only the date
// arithmetic tells them apart.
func (g *bankGen) plantHeldOut2Temporal(k int) {
	n := len(g.sessions)
	day := func(s int) time.Time { return g.sessions[s].start.Truncate(24 * time.Hour) }
	planted := 0
	for _, kind := range g.order(4) {
		if planted == k {
			return
		}
		switch kind {
		case 0: // "last night"
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOut2Evenings))
			say := []string{"Last night I {v}. Great fun, terrible sleep.", "I {v} last night and I'm running on coffee today."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			_, other := splitKey(g.draw(heldOut2Evenings))
			g.userSays(g.sessionIn(0, n, s), fill("Last night I {v}, it was fine I suppose.", "v", other), false)
			asks := []string{"What did I do on the evening of {d}?", "How did I spend the night of {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).AddDate(0, 0, -1).Format(heldOut2Date)), g.end(), []string{key}, ev)
		case 1: // "the day before yesterday"
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOut2Errands))
			say := []string{"The day before yesterday I {v}, so that's ticked off.", "Finally {v} the day before yesterday, only took me a month."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			_, other := splitKey(g.draw(heldOut2Errands))
			g.userSays(g.sessionIn(0, n, s), fill("The day before yesterday I {v}, what a palaver.", "v", other), false)
			asks := []string{"What errand did I run on {d}?", "What did I sort out on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).AddDate(0, 0, -2).Format(heldOut2Date)), g.end(), []string{key}, ev)
		case 2: // "tomorrow", a plan asked about afterwards
			s := g.sessionIn(0, n)
			key, phrase := splitKey(g.draw(heldOut2Tomorrows))
			say := []string{"Tomorrow I {v}, so it's an early night for me.", "Note to self: tomorrow I {v}."}
			ev := g.userSays(s, fill(pick(g.rng, say), "v", phrase), true)
			_, other := splitKey(g.draw(heldOut2Tomorrows))
			g.userSays(g.sessionIn(0, n, s), fill("Tomorrow I {v}, not looking forward to it.", "v", other), false)
			asks := []string{"What did I have on the calendar for {d}?", "What was booked in for me on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", day(s).AddDate(0, 0, 1).Format(heldOut2Date)), g.end(), []string{key}, ev)
		case 3: // "in n days", a plan asked about afterwards
			s := g.sessionIn(0, n)
			days := 3 + g.rng.IntN(4)
			key, phrase := splitKey(g.draw(heldOut2Ahead))
			ev := g.userSays(s, fill("In {n} days I {v}, and I'm already nervous.", "n", heldOut2DayWords[days], "v", phrase), true)
			when := day(s).AddDate(0, 0, days)
			// The distractor's plan must fall on another day, or the
			// question would have two answers.
			o, od := g.sessionIn(0, n, s), 3+g.rng.IntN(4)
			if day(o).AddDate(0, 0, od).Equal(when) {
				od = 3 + (od-3+1)%4
			}
			_, other := splitKey(g.draw(heldOut2Ahead))
			if !day(o).AddDate(0, 0, od).Equal(when) {
				g.userSays(o, fill("In {n} days I {v}, can't wait.", "n", heldOut2DayWords[od], "v", other), false)
			}
			asks := []string{"What did I have lined up for {d}?", "What was I due to do on {d}?"}
			g.ask(TypeTemporalReasoning, fill(pick(g.rng, asks), "d", when.Format(heldOut2Date)), g.end(), []string{key}, ev)
		}
		planted++
	}
}

var heldOut2ZhUserNames = []string{"白露", "段鹏", "方圆", "彭欣", "薛楠", "葛亮"}

var heldOut2ZhPeople = []person{
	{"邱雪", "Qiu Xue", "雪儿"},
	{"吴刚", "Wu Gang", "老吴"},
	{"朱琳", "Zhu Lin", "琳姐"},
	{"何斌", "He Bin", "斌哥"},
	{"林涛", "Lin Tao", "涛子"},
	{"郭美玲", "Guo Meiling", "玲玲"},
	{"曹颖", "Cao Ying", "颖子"},
	{"潘建国", "Pan Jianguo", "老潘"},
}

var heldOut2CrossLingual = []zhTemplate{{
	pool:  []string{"黄瓜|cucumbers", "辣椒|chili peppers", "香菜|coriander", "葡萄|grapes", "茉莉花|jasmine", "多肉|succulents"},
	say:   []string{"{a}在阳台上种了一排{v}，每天下班先去看一眼。", "{a}说今年阳台上的{v}长得特别好，还送了邻居一些。"},
	askEn: []string{"What is {a} growing on the balcony?"},
	askZh: []string{"{a}在阳台上种了什么？"},
}, {
	pool:  []string{"法语|French", "阿拉伯语|Arabic", "意大利语|Italian", "俄语|Russian", "泰语|Thai", "西班牙语|Spanish"},
	say:   []string{"{a}每天早上通勤的时候都在背{v}单词。", "{a}报了个{v}培训班，说明年想去那边工作。"},
	askEn: []string{"Which language is {a} learning?"},
	askZh: []string{"{a}在学哪门外语？"},
}, {
	pool:  []string{"太极拳|tai chi", "剪纸|paper cutting", "茶艺|tea ceremony", "插花|flower arranging", "书画|ink painting", "广场舞|square dancing"},
	say:   []string{"{a}最近迷上了{v}，周末都泡在工作室里。", "{a}报了一个{v}课，说特别解压。"},
	askEn: []string{"What hobby has {a} taken up?"},
	askZh: []string{"{a}最近爱上了什么爱好？"},
}, {
	pool:  []string{"英国|Britain", "澳大利亚|Australia", "加拿大|Canada", "新加坡|Singapore", "德国|Germany", "荷兰|the Netherlands"},
	say:   []string{"{a}拿到了{v}一所大学的录取通知书，九月就走。", "{a}决定去{v}读研，签证已经办好了。"},
	askEn: []string{"Which country is {a} going to study in?"},
	askZh: []string{"{a}要去哪个国家留学？"},
}, {
	pool:  []string{"护士|nurse", "导游|tour guide", "兽医|vet", "快递员|courier", "消防员|firefighter", "会计|accountant"},
	say:   []string{"{a}辞掉了原来的工作，现在当{v}了。", "{a}转行做{v}，说终于找到喜欢的事了。"},
	askEn: []string{"What is {a}'s job these days?"},
	askZh: []string{"{a}现在做什么工作？"},
}, {
	pool:  []string{"红烧肉|braised pork", "鱼香肉丝|yuxiang shredded pork", "麻婆豆腐|mapo tofu", "糖醋排骨|sweet and sour ribs", "粽子|zongzi", "宫保鸡丁|kung pao chicken"},
	say:   []string{"{a}做的{v}特别好吃，每次聚会都被抢光。", "过年的时候{a}露了一手，做了一大盘{v}。"},
	askEn: []string{"What dish is {a} known for cooking?"},
	askZh: []string{"{a}最拿手的菜是什么？"},
}}

var heldOut2FillerEN = [][2]string{
	{"The bin men skipped our street again this week.", "That's annoying. Reporting it to the council usually gets a collection sorted."},
	{"I need to {t} before the weekend, remind me?", "Sure. Maybe put it first on tomorrow's list so it's out of the way."},
	{"Keep meaning to {t} and keep not doing it.", "Ten minutes on it today might be enough to get it moving."},
	{"Lunch was {s} eaten over the keyboard, very glamorous.", "Ha, we've all been there. Try to step away for the next one."},
	{"Is {s} a reasonable dinner if I'm too tired to cook?", "On a tired night, absolutely. Add some fruit and call it balanced."},
	{"Why do my eyes get so dry by the afternoon?", "Screens make people blink less. Regular breaks and looking into the distance help."},
	{"What's the quickest way to defrost a freezer?", "Switch it off, put bowls of hot water inside and keep the door shut for a while."},
	{"The upstairs flat is drilling again.", "That's grating. Headphones might save your sanity until they stop."},
	{"My basil keeps wilting on the windowsill.", "It probably wants more water and a bit less direct midday heat."},
	{"We watched {w} last night and now I can't stop thinking about it.", "That's the sign of a good one. What stuck with you?"},
	{"A friend keeps telling me to try {w}, worth it?", "Give it an episode or two; you'll know fast whether it's for you."},
	{"My phone storage is full again.", "Clearing old videos and the message attachments usually frees the most space."},
	{"Frost on everything this morning, I had to scrape the windscreen.", "Brr. Leaving a little earlier on icy days takes the stress out of it."},
	{"Sat on hold with the energy company for fifty minutes.", "That's a long time. Did you get it resolved in the end?"},
	{"Can you tell me in plain words what an index fund is?", "It's a fund that buys a bit of every company in a market index, so you own the whole market cheaply."},
	{"How many teaspoons are in a tablespoon?", "Three teaspoons make one tablespoon."},
	{"My shoulders are up by my ears today.", "Try dropping them and taking three slow breaths; stress likes to sit there."},
	{"the printer at work has jammed for the third time", "Classic printer. Checking for a torn scrap of paper inside often fixes it."},
	{"I've had about four hours of sleep.", "Go easy on yourself today, and maybe an early night."},
	{"There's a strange squeak when I brake on my bike.", "Often it's just dirty brake pads; a clean usually quiets it."},
	{"What's a polite way to leave a group chat?", "A short friendly message before you leave is plenty."},
	{"Our cat brought a live frog into the kitchen.", "Oh dear! A tea towel and a calm hand should get it back outside."},
}

var heldOut2FillerSlots = map[string][]string{
	"t": {"defrost the freezer", "renew the parking permit", "return those parcels", "cancel a gym trial", "descale the shower head", "sort the loft"},
	"s": {"a cold pasty", "crackers and hummus", "a supermarket meal deal", "instant noodles", "a jacket potato", "toast with marmite"},
	"w": {"a Scandinavian sci-fi series", "a true-crime podcast series", "a baking contest show", "a historical costume drama", "a space documentary"},
}

var heldOut2AcksEN = []string{
	"Noted, thank you for telling me.",
	"Oh, how exciting!",
	"Good to know.",
	"That's quite the update.",
	"I'll keep that in mind.",
	"Sounds like a busy stretch for you.",
}

var heldOut2FillerZH = [][2]string{
	{"小区门口在修路，每天早上都堵。", "修路期间可以早点出门，或者换条路线。"},
	{"今天食堂的菜太咸了。", "多喝点水，下午可能会口渴。"},
	{"同事请大家喝咖啡，挺开心的。", "好暖心的同事！"},
	{"这周连续加了三天班，好累。", "辛苦了，周末一定要好好休息。"},
	{"阳台上的绿萝黄叶了。", "可能浇水太多了，等土干了再浇。"},
	{"手机屏幕摔裂了一个角。", "先贴个膜，免得划到手。"},
	{"今天降温了，风特别大。", "出门记得多穿一点。"},
	{"晚上煮了一锅粥，简单吃点。", "清淡一点挺好的。"},
	{"地铁上睡着了，差点坐过站。", "太累了吧，设个闹钟提醒自己。"},
	{"楼上邻居又在装修，电钻声一直响。", "可以问问物业装修允许的时间段。"},
	{"周末在家把衣柜整理了一遍。", "整理完心情也会清爽很多。"},
	{"最近在追一部古装剧，停不下来。", "好看的剧确实容易熬夜，注意休息。"},
}

var heldOut2AcksZH = []string{"收到，记住啦。", "真替你高兴！", "了解，谢谢告诉我。", "哇，这是个大新闻。", "嗯，明白了。"}

// heldOut2Vocabulary is the second held-out part. Its sessions begin in
// the autumn of 2023, before every other part's.
var heldOut2Vocabulary = vocabulary{
	part:         PartHeldOut2,
	bankPrefix:   "held2",
	stream:       heldOut2Stream,
	start:        time.Date(2023, time.September, 4, 0, 0, 0, 0, time.UTC),
	userNames:    heldOut2UserNames,
	otherPeople:  heldOut2OtherPeople,
	ssu:          heldOut2SSU,
	ssa:          heldOut2SSA,
	ssp:          heldOut2SSP,
	multi:        heldOut2Multi,
	update:       heldOut2Update,
	abstention:   heldOut2Abstention,
	temporal:     (*bankGen).plantHeldOut2Temporal,
	zhUserNames:  heldOut2ZhUserNames,
	zhPeople:     heldOut2ZhPeople,
	crossLingual: heldOut2CrossLingual,
	fillerEN:     heldOut2FillerEN,
	fillerZH:     heldOut2FillerZH,
	fillerSlots:  heldOut2FillerSlots,
	acksEN:       heldOut2AcksEN,
	acksZH:       heldOut2AcksZH,
}
