package simscale

// probeVersion changes whenever the probe set or what is measured on it
// does, so that a scale measured by an older version is measured again
// (2: the query-form direction; 3: the query mean).
const probeVersion = 3

// probeSpeaker labels the first-person probe statements the way the
// extractor labels a speaker's facts ("Sam: I …"), so the probe sees the
// shared prefix that every fact of one speaker carries.
const probeSpeaker = "Sam: "

// probeGroup is one topic: statements that say the same thing in other
// words, and a question they answer. Statements of different groups are
// unrelated. The groups cover everyday life in English and Chinese and
// were written for this purpose only: they are not any benchmark's
// sentences, and nothing here was chosen by looking at how an embedder
// scores them.
type probeGroup struct {
	statements []string
	question   string
	// firstPerson statements get probeSpeaker.
	firstPerson bool
}

var probeGroups = []probeGroup{
	{firstPerson: true, statements: []string{
		"I've been learning to play chess online every evening.",
		"Most nights I practise chess against people on the internet.",
		"My evenings go to online chess games lately.",
	}, question: "What game do I play at night?"},
	{firstPerson: true, statements: []string{
		"I can't eat gluten, bread makes me ill.",
		"Wheat doesn't agree with me, so I avoid gluten completely.",
		"I have to stay away from anything containing gluten.",
	}, question: "Is there anything I can't eat?"},
	{firstPerson: true, statements: []string{
		"My grandmother turns ninety next spring.",
		"Next spring we celebrate my grandma's 90th birthday.",
		"Grandma will be ninety years old in the spring.",
	}, question: "How old is my grandmother going to be?"},
	{firstPerson: true, statements: []string{
		"I ride my bike to the office when it isn't raining.",
		"On dry days I cycle to work.",
		"Unless it rains, I get to work by bicycle.",
	}, question: "How do I travel to my job?"},
	{firstPerson: true, statements: []string{
		"We're repainting the living room a pale green.",
		"The lounge is getting a new coat of light green paint.",
		"I'm painting our sitting room soft green this month.",
	}, question: "What colour is the living room going to be?"},
	{firstPerson: true, statements: []string{
		"I'm terrified of flying and take the train whenever I can.",
		"Planes scare me, so I travel by rail if possible.",
		"Because I hate planes, I usually choose trains.",
	}, question: "Why do I avoid airports?"},
	{firstPerson: true, statements: []string{
		"My daughter just lost her first tooth.",
		"The little one's first baby tooth came out today.",
		"Our girl pulled out her very first milk tooth.",
	}, question: "What happened to my child's teeth?"},
	{firstPerson: true, statements: []string{
		"I volunteer at the hospital gift shop on Thursdays.",
		"Every Thursday I help out unpaid in the hospital shop.",
		"Thursdays I give my time to the shop at the hospital.",
	}, question: "Where do I help out each week?"},
	{firstPerson: true, statements: []string{
		"I switched to decaffeinated tea because of my sleep.",
		"To sleep better I only drink tea without caffeine now.",
		"My tea is caffeine-free these days so I can sleep.",
	}, question: "What do I drink to help my sleep?"},
	{firstPerson: true, statements: []string{
		"I'm saving up to buy a small sailing boat.",
		"I put money aside every month for a little sailboat.",
		"My savings are going towards a boat I can sail.",
	}, question: "What am I saving money for?"},
	{statements: []string{
		"The library closes early on Sundays, at four in the afternoon.",
		"On Sundays the public library shuts at 4 pm.",
		"Sunday opening hours at the library end at four.",
	}, question: "When does the library close on Sunday?"},
	{statements: []string{
		"The river flooded the lower town after a week of storms.",
		"After days of heavy storms the river burst its banks and flooded the low streets.",
		"Storm water made the river overflow into the lower part of town.",
	}, question: "What did the storms do to the town?"},
	{statements: []string{
		"The bakery on the corner sells out of croissants by nine.",
		"By 9 am the corner bakery has no croissants left.",
		"Croissants at the bakery on the corner are gone early in the morning.",
	}, question: "When should I get to the bakery for pastries?"},
	{statements: []string{
		"The new tram line connects the station with the airport.",
		"Trams now run from the railway station to the airport.",
		"A recently opened tram route links the airport and the station.",
	}, question: "How can I get from the station to the airport?"},
	{firstPerson: true, statements: []string{
		"我每天早上六点起床去跑步。",
		"我习惯清晨六点起来晨跑。",
		"每天六点我都会起床出去跑步。",
	}, question: "我早上几点起床？"},
	{firstPerson: true, statements: []string{
		"我对猫毛过敏，一碰就打喷嚏。",
		"猫的毛会让我过敏，鼻子很难受。",
		"我接触猫就会过敏打喷嚏。",
	}, question: "我对什么过敏？"},
	{firstPerson: true, statements: []string{
		"我弟弟下个月要去德国读研究生。",
		"下个月我弟弟出国去德国念研究生。",
		"我的弟弟准备下月到德国攻读硕士。",
	}, question: "我弟弟要去哪里留学？"},
	{statements: []string{
		"小区门口新开了一家书店，周末人很多。",
		"我们小区外面刚开了家书店，一到周末就很热闹。",
		"门口那家新书店周末总是挤满了人。",
	}, question: "小区门口开了什么店？"},
	{statements: []string{
		"这家餐厅的火锅特别辣，要提前订位。",
		"那家店的火锅非常辣，最好先预订座位。",
		"去这家吃火锅得提前订位，而且很辣。",
	}, question: "那家餐厅需要预订吗？"},
	{firstPerson: true, statements: []string{
		"I'm reading a biography of Marie Curie at the moment.",
		"Right now I'm in the middle of a book about Marie Curie's life.",
		"My current book is the life story of Marie Curie.",
	}, question: "What book am I reading?"},
}

// probeStatement renders statement j of group g as it would be stored.
func probeStatement(g probeGroup, j int) string {
	if g.firstPerson {
		return probeSpeaker + g.statements[j]
	}
	return g.statements[j]
}
