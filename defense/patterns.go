package defense

import (
	"regexp"
	"sync"
)

// Categories group labels so a bank policy can say "block every payment
// secret" without listing each vendor. They are part of the policy contract
// (stored as JSONB), so renaming one is a breaking change.
const (
	CategoryAI            = "ai"
	CategoryCloud         = "cloud"
	CategorySourceControl = "source_control"
	CategoryPayment       = "payment"
	CategoryCommunication = "communication"
	CategorySaaS          = "saas"
	CategoryCredentialURL = "credential_url"
	CategoryGeneric       = "generic_credential"
	CategoryPrivateKey    = "private_key"
	CategoryJWT           = "jwt"
	CategoryPII           = "pii"
	CategoryEmail         = "email"
	CategoryPhone         = "phone"
)

// defaultPatternMaxLen bounds a token match; longer runs fail the right
// boundary check instead of being cut.
const defaultPatternMaxLen = 512

type patternKind uint8

const (
	// kindRegex patterns run their regex in windows around keyword hits.
	kindRegex patternKind = iota
	// kindDigits patterns are found by the hand-written digit scanner
	// (cards, SSNs, IBANs): checksums are cheaper and stricter in code.
	kindDigits
	// kindFullScan patterns have no literal to key on and run over the
	// whole text. Only opt-in patterns may use it, so the default path stays
	// keyword-gated.
	kindFullScan
)

// Pattern is one detector in the library. Only descriptive fields are
// exported: the matching machinery is internal so a caller cannot build a
// pattern that breaks the scanner's span invariants.
type Pattern struct {
	// Label names what was found, e.g. "anthropic_api_key". It appears in
	// redaction markers, metrics and audit records, so it is stable and
	// bounded.
	Label string
	// Category groups labels for policy decisions.
	Category string
	// Keywords are the literals whose presence gates the regex. Matching is
	// ASCII case-insensitive unless the pattern is case-sensitive.
	Keywords []string
	// OptIn patterns (email, phone) only run when a policy enables them:
	// they are personal data but also everyday content.
	OptIn bool

	kind          patternKind
	caseSensitive bool
	expr          string
	re            *regexp.Regexp
	anchored      *regexp.Regexp        // "^(?:expr)", used when the match starts at the keyword
	simple        *simpleMatcher        // regex-free equivalent of anchored, when one exists
	custom        func(in string) []int // hand-written anchored matcher; the regex documents it
	needAssign    bool                  // ':' or '=' must follow the keyword closely
	group         int                   // submatch reported as the finding; 0 = whole match
	before        int                   // how far before a keyword hit the match may start; 0 = match starts at the keyword
	maxLen        int                   // longest match; bounds the regex window
	leftBound     bool
	rightBound    bool
	tail          string // bytes besides [A-Za-z0-9_] that continue the token
	validate      func(string) bool
}

// tok is a self-identifying token: the keyword is its prefix, and it must
// not touch other token bytes on either side.
func tok(label, cat, expr string, kws ...string) Pattern {
	return Pattern{Label: label, Category: cat, Keywords: kws, expr: expr,
		maxLen: defaultPatternMaxLen, leftBound: true, rightBound: true,
		validate: notLowEntropy}
}

// ctx is a context-anchored secret: the keyword is a variable name near the
// value, and submatch 1 is the value alone, so the name stays readable
// after redaction.
func ctx(label, cat, expr string, kws ...string) Pattern {
	return Pattern{Label: label, Category: cat, Keywords: kws, expr: expr,
		group: 1, maxLen: defaultPatternMaxLen,
		rightBound: true, validate: notLowEntropy, needAssign: true}
}

func (p Pattern) cs() Pattern                       { p.caseSensitive = true; return p }
func (p Pattern) tailBytes(s string) Pattern        { p.tail = s; return p }
func (p Pattern) check(f func(string) bool) Pattern { p.validate = f; return p }
func (p Pattern) window(before, maxLen int) Pattern { p.before, p.maxLen = before, maxLen; return p }
func (p Pattern) submatch(g int) Pattern            { p.group = g; return p }
func (p Pattern) bounds(left, right bool) Pattern   { p.leftBound, p.rightBound = left, right; return p }
func special(label, cat string, kind patternKind) Pattern {
	return Pattern{Label: label, Category: cat, kind: kind}
}

// Counted repeats are kept small or written unbounded with a window
// (maxLen) instead: Go compiles {m,n} into n instructions, and a large
// program pushes the regexp package off its fast backtracker onto the NFA.
// With the right-boundary check, "{24,} in a 255-byte window" rejects
// exactly what "{24,247}" would.
//
// Shared value syntaxes. Context values are restricted to ASCII so a value
// never swallows the CJK text that follows it without a space.
const (
	assign      = `["']?\s*(?:=>|:=|[:=])\s*["']?`
	urlUserinfo = `[A-Za-z0-9!$%&()*+,;=._~-]`
	ctxName     = `[A-Za-z0-9_ .-]{0,24}?`
	b64url      = `[A-Za-z0-9_-]`
)

func urlPassword(label, scheme string, kws ...string) Pattern {
	return Pattern{Label: label, Category: CategoryCredentialURL, Keywords: kws,
		expr:  `(?i)` + scheme + `://` + urlUserinfo + `*:(` + urlUserinfo + `+)@`,
		group: 1, maxLen: 600, leftBound: true, validate: notPlaceholder}
}

// patternList is the ordered library: most specific first, because on
// overlap the earlier pattern wins (sk-ant- must beat the generic sk- rule,
// a GCP key JSON must beat the bare PEM rule, vendor tokens must beat the
// generic "token=" rule).
func patternList() []Pattern {
	return []Pattern{
		// --- AI vendors ---------------------------------------------------
		tok("anthropic_api_key", CategoryAI, `sk-ant-`+b64url+`{32,300}`, "sk-ant-"),
		tok("openrouter_api_key", CategoryAI, `sk-or-v1-[a-f0-9]{64}`, "sk-or-v1-"),
		tok("openai_project_key", CategoryAI, `sk-proj-`+b64url+`{20,300}`, "sk-proj-").tailBytes("-"),
		tok("openai_admin_key", CategoryAI, `sk-admin-`+b64url+`{20,300}`, "sk-admin-").tailBytes("-"),
		tok("openai_service_account_key", CategoryAI, `sk-svcacct-`+b64url+`{20,300}`, "sk-svcacct-").tailBytes("-"),
		tok("openai_legacy_key", CategoryAI, `sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}`, "sk-").window(0, 64),
		// Bare "sk-" keys (legacy OpenAI, and the many OpenAI-compatible
		// vendors copying the shape) have no '-' or '_' in the body, which
		// keeps kebab-case words such as "sk-learn-0-24-…" out.
		tok("openai_api_key", CategoryAI, `sk-[A-Za-z0-9]{32,200}`, "sk-").tailBytes("-_").check(mixedToken),
		tok("google_api_key", CategoryAI, `AIza`+b64url+`{35}`, "AIza").cs().tailBytes("-"),
		tok("google_oauth_access_token", CategoryAI, `ya29\.`+b64url+`{20,}`, "ya29.").tailBytes("-").window(0, 4096),
		tok("google_oauth_client_secret", CategoryAI, `GOCSPX-`+b64url+`{28}`, "GOCSPX-").cs().tailBytes("-"),
		tok("xai_api_key", CategoryAI, `xai-[A-Za-z0-9]{32,120}`, "xai-").check(mixedToken),
		tok("groq_api_key", CategoryAI, `gsk_[A-Za-z0-9]{40,64}`, "gsk_"),
		tok("huggingface_token", CategoryAI, `hf_[A-Za-z0-9]{30,40}`, "hf_"),
		tok("replicate_api_token", CategoryAI, `r8_[A-Za-z0-9]{30,45}`, "r8_"),
		tok("perplexity_api_key", CategoryAI, `pplx-[A-Za-z0-9]{40,64}`, "pplx-"),
		tok("databricks_token", CategoryAI, `dapi[a-f0-9]{32}(?:-[0-9])?`, "dapi"),
		tok("langsmith_api_key", CategoryAI, `lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`, "lsv2_"),
		tok("pinecone_api_key", CategoryAI, `pcsk_[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,90}`, "pcsk_"),
		tok("tavily_api_key", CategoryAI, `tvly-(?:dev-|prod-)?[A-Za-z0-9]{32}`, "tvly-"),

		// --- Cloud and infrastructure --------------------------------------
		tok("aws_access_key_id", CategoryCloud, `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}`, "AKIA", "ASIA", "ABIA", "ACCA").cs(),
		ctx("aws_secret_access_key", CategoryCloud, `(?i)secret[_-]?access[_-]?key`+assign+`([A-Za-z0-9/+]{40})`,
			"secret_access_key", "secretaccesskey", "secret-access-key").tailBytes("/+"),
		ctx("aws_session_token", CategoryCloud, `(?i)session[_-]?token`+assign+`([A-Za-z0-9/+=]{100,})`,
			"session_token", "sessiontoken", "session-token").tailBytes("/+=").window(0, 4096),
		tok("aws_sts_session_token", CategoryCloud, `(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz)[A-Za-z0-9/+=]{100,}`,
			"IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz").cs().tailBytes("/+=").window(0, 4096),
		ctx("gcp_service_account_key", CategoryCloud,
			`"private_key"\s*:\s*"(-----BEGIN[A-Z ]{0,20}PRIVATE KEY-----[A-Za-z0-9+/=\\\s]+?-----END[A-Z ]{0,20}PRIVATE KEY-----(?:\\n)?)"`,
			`"private_key"`).window(0, 12288).bounds(false, false).matcher(matchGCPKey),
		ctx("azure_storage_account_key", CategoryCloud, `(?i)AccountKey=([A-Za-z0-9+/]{86}==)`, "accountkey=").tailBytes("+/="),
		ctx("azure_shared_access_key", CategoryCloud, `(?i)SharedAccessKey=([A-Za-z0-9+/]{42,44}=)`, "sharedaccesskey=").tailBytes("+/="),
		tok("azure_client_secret", CategoryCloud, `[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}`, "Q~").cs().window(4, 48).tailBytes("~.-"),
		tok("digitalocean_pat", CategoryCloud, `dop_v1_[a-f0-9]{64}`, "dop_v1_"),
		tok("digitalocean_oauth_token", CategoryCloud, `doo_v1_[a-f0-9]{64}`, "doo_v1_"),
		tok("digitalocean_refresh_token", CategoryCloud, `dor_v1_[a-f0-9]{64}`, "dor_v1_"),
		tok("heroku_api_key", CategoryCloud, `HRKU-`+b64url+`{40,80}`, "HRKU-").cs().tailBytes("-"),
		ctx("heroku_api_key_legacy", CategoryCloud,
			`(?i)heroku`+ctxName+`(?:api[_-]?key|token|secret|key)`+assign+`([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`,
			"heroku").window(0, 128).tailBytes("-"),
		ctx("cloudflare_api_token", CategoryCloud,
			`(?i)(?:cloudflare|cf)`+ctxName+`(?:api[_-]?token|api[_-]?key|token|key)`+assign+`(`+b64url+`{37,40})`,
			"cloudflare", "cf_", "cf-").window(0, 128).tailBytes("-").check(mixedToken),
		tok("cloudflare_origin_ca_key", CategoryCloud, `v1\.0-[a-f0-9]{24}-[a-f0-9]{146}`, "v1.0-"),
		tok("vault_token", CategoryCloud, `hvs\.`+b64url+`{90,300}`, "hvs.").tailBytes("-"),
		tok("terraform_cloud_token", CategoryCloud, `[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}`, ".atlasv1.").window(14, 100).tailBytes("-="),
		tok("doppler_token", CategoryCloud, `dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,44}`, "dp.pt.", "dp.st.", "dp.sa.", "dp.ct."),
		tok("pulumi_access_token", CategoryCloud, `pul-[a-f0-9]{40}`, "pul-"),
		tok("supabase_access_token", CategoryCloud, `sbp_[a-f0-9]{40}`, "sbp_"),
		tok("grafana_service_account_token", CategoryCloud, `glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}`, "glsa_"),
		tok("grafana_cloud_token", CategoryCloud, `glc_[A-Za-z0-9+/]{32,}={0,2}`, "glc_").tailBytes("+/=").window(0, 410),
		tok("newrelic_user_api_key", CategoryCloud, `NRAK-[A-Z0-9]{27}`, "NRAK-").cs(),
		tok("sentry_auth_token", CategoryCloud, `(?:sntrys_[A-Za-z0-9+/=_]{100,}|sntryu_[a-f0-9]{64})`, "sntrys_", "sntryu_").tailBytes("+/=").window(0, 410),

		// --- Source control, CI, registries --------------------------------
		tok("github_fine_grained_pat", CategorySourceControl, `github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}`, "github_pat_"),
		tok("github_pat", CategorySourceControl, `ghp_[A-Za-z0-9]{36,251}`, "ghp_"),
		tok("github_oauth_token", CategorySourceControl, `gho_[A-Za-z0-9]{36,251}`, "gho_"),
		tok("github_user_to_server_token", CategorySourceControl, `ghu_[A-Za-z0-9]{36,251}`, "ghu_"),
		tok("github_app_token", CategorySourceControl, `ghs_[A-Za-z0-9]{36,251}`, "ghs_"),
		tok("github_refresh_token", CategorySourceControl, `ghr_[A-Za-z0-9]{36,251}`, "ghr_"),
		tok("gitlab_pat", CategorySourceControl, `glpat-`+b64url+`{20,}(?:\.`+b64url+`{2,}){0,3}`, "glpat-").tailBytes("-"),
		tok("gitlab_runner_token", CategorySourceControl, `glrt-`+b64url+`{20,120}`, "glrt-").tailBytes("-"),
		tok("gitlab_pipeline_trigger_token", CategorySourceControl, `glptt-[a-f0-9]{40}`, "glptt-"),
		tok("gitlab_deploy_token", CategorySourceControl, `gldt-`+b64url+`{20,120}`, "gldt-").tailBytes("-"),
		tok("bitbucket_app_password", CategorySourceControl, `ATBB[A-Za-z0-9]{28,64}`, "ATBB").cs(),
		tok("atlassian_api_token", CategorySourceControl, `ATATT3[A-Za-z0-9_=-]{150,250}`, "ATATT3").cs().tailBytes("-="),
		tok("npm_token", CategorySourceControl, `npm_[A-Za-z0-9]{36}`, "npm_"),
		tok("pypi_token", CategorySourceControl, `pypi-AgEIcHlwaS5vcmc`+b64url+`{50,}`, "pypi-AgEIcHlwaS5vcmc").cs().tailBytes("-").window(0, 2048),
		tok("dockerhub_pat", CategorySourceControl, `dckr_pat_`+b64url+`{27}`, "dckr_pat_").tailBytes("-"),

		// --- Payments ------------------------------------------------------
		tok("stripe_secret_key", CategoryPayment, `sk_(?:live|test)_[A-Za-z0-9]{24,}`, "sk_live_", "sk_test_").window(0, 255),
		tok("stripe_restricted_key", CategoryPayment, `rk_(?:live|test)_[A-Za-z0-9]{24,}`, "rk_live_", "rk_test_").window(0, 255),
		tok("stripe_webhook_secret", CategoryPayment, `whsec_[A-Za-z0-9+/=]{32,100}`, "whsec_").tailBytes("+/="),
		tok("square_access_token", CategoryPayment, `(?:sq0atp-`+b64url+`{22,60}|EAAA[A-Za-z0-9_+=-]{60})`, "sq0atp-", "EAAA").cs().tailBytes("-+="),
		tok("square_oauth_secret", CategoryPayment, `sq0csp-`+b64url+`{43,60}`, "sq0csp-").tailBytes("-"),
		tok("braintree_access_token", CategoryPayment, `access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}`, "access_token$"),
		tok("shopify_access_token", CategoryPayment, `shpat_[a-fA-F0-9]{32}`, "shpat_"),
		tok("shopify_shared_secret", CategoryPayment, `shpss_[a-fA-F0-9]{32}`, "shpss_"),
		tok("shopify_custom_app_token", CategoryPayment, `shpca_[a-fA-F0-9]{32}`, "shpca_"),
		tok("shopify_private_app_token", CategoryPayment, `shppa_[a-fA-F0-9]{32}`, "shppa_"),

		// --- Communication -------------------------------------------------
		tok("slack_bot_token", CategoryCommunication, `xoxb-[0-9]{8,14}-[A-Za-z0-9-]{20,200}`, "xoxb-").tailBytes("-"),
		tok("slack_user_token", CategoryCommunication, `xoxp-[0-9]{8,14}-[A-Za-z0-9-]{20,200}`, "xoxp-").tailBytes("-"),
		tok("slack_app_token", CategoryCommunication, `xapp-[0-9]-[A-Z0-9]{8,14}-[0-9]{8,16}-[A-Za-z0-9]{32,100}`, "xapp-"),
		tok("slack_token", CategoryCommunication, `(?:xox[aeors]-(?:[0-9]{1,14}-)?[A-Za-z0-9-]{20,}|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{100,})`,
			"xoxa-", "xoxe-", "xoxo-", "xoxr-", "xoxs-", "xoxe.").tailBytes("-").window(0, 320),
		tok("slack_webhook_url", CategoryCommunication, `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,200}`,
			"https://hooks.slack.com/").window(0, 256).tailBytes("+/-"),
		tok("discord_webhook_url", CategoryCommunication, `https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/`+b64url+`{60,100}`,
			"https://discord.com/api/webhooks/", "https://discordapp.com/api/webhooks/",
			"https://ptb.discord.com/api/webhooks/", "https://canary.discord.com/api/webhooks/").window(0, 200).tailBytes("-"),
		ctx("discord_bot_token", CategoryCommunication,
			`(?i)discord`+ctxName+`token`+assign+`(?:Bot )?([MNO]`+b64url+`{23,27}\.`+b64url+`{6}\.`+b64url+`{27,40})`,
			"discord").window(0, 160).tailBytes("-"),
		tok("telegram_bot_token", CategoryCommunication, `[0-9]{8,10}:AA`+b64url+`{33}`, ":AA").cs().window(10, 48).tailBytes("-"),
		tok("twilio_api_key", CategoryCommunication, `SK[0-9a-fA-F]{32}`, "SK").cs(),
		tok("twilio_account_sid", CategoryCommunication, `AC[0-9a-f]{32}`, "AC").cs(),
		ctx("twilio_auth_token", CategoryCommunication, `(?i)twilio`+ctxName+`(?:auth[_-]?)?token`+assign+`([0-9a-f]{32})`, "twilio").window(0, 128),
		tok("sendgrid_api_key", CategoryCommunication, `SG\.`+b64url+`{22}\.`+b64url+`{43}`, "SG.").cs().tailBytes("-"),
		tok("mailgun_api_key", CategoryCommunication, `key-[0-9a-f]{32}`, "key-"),
		ctx("mailgun_signing_key", CategoryCommunication,
			`(?i)mailgun`+ctxName+`(?:api[_-]?key|signing[_-]?key|key|secret)`+assign+`([0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})`,
			"mailgun").window(0, 128).tailBytes("-"),
		tok("mailchimp_api_key", CategorySaaS, `[0-9a-f]{32}-us[0-9]{1,2}`, "-us").window(32, 40),
		tok("linear_api_key", CategorySaaS, `lin_api_[A-Za-z0-9]{40}`, "lin_api_"),
		tok("postman_api_key", CategorySaaS, `PMAK-[a-f0-9]{24}-[a-f0-9]{34}`, "PMAK-").cs(),
		tok("notion_token", CategorySaaS, `ntn_[0-9]{11}[A-Za-z0-9]{35}`, "ntn_"),

		// --- Credentials in URLs: only the password is redacted, so the
		// host and user stay useful as memory ("the app talks to db-3"). ----
		urlPassword("postgres_url_password", `postgres(?:ql)?`, "postgres://", "postgresql://"),
		urlPassword("mysql_url_password", `mysqlx?`, "mysql://", "mysqlx://"),
		urlPassword("mongodb_url_password", `mongodb(?:\+srv)?`, "mongodb://", "mongodb+srv://"),
		urlPassword("redis_url_password", `rediss?`, "redis://", "rediss://"),
		urlPassword("amqp_url_password", `amqps?`, "amqp://", "amqps://"),
		urlPassword("url_basic_auth_password", `(?:https?|ftps?|sftp|smtps?|ldaps?|ssh)`,
			"http://", "https://", "ftp://", "ftps://", "sftp://", "smtp://", "smtps://", "ldap://", "ldaps://", "ssh://"),

		// --- Keys ------------------------------------------------------------
		tok("private_key_block", CategoryPrivateKey,
			`-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?-----END[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----`,
			"-----begin").window(0, 16384).bounds(false, false).check(nil).matcher(matchPEM),
		tok("private_key_block_truncated", CategoryPrivateKey,
			`-----BEGIN[A-Z ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[ \t]*(?:\r?\n|\\n)[ \t]*[A-Za-z0-9+/=:, -]{1,100})*`,
			"-----begin").window(0, 16384).bounds(false, false).check(nil).matcher(matchPEMTruncated),
		tok("age_secret_key", CategoryPrivateKey, `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`, "AGE-SECRET-KEY-1").cs(),
		tok("jwt", CategoryJWT, `eyJ`+b64url+`{10,}\.`+b64url+`{10,}\.`+b64url+`{10,}`, "eyJ").cs().tailBytes("-").window(0, 8192).check(validJWT),

		// --- Generic assignments: last, so every vendor rule wins. ---------
		ctx("password_assignment", CategoryGeneric,
			`(?i)(?:password|passwd|pwd)`+assign+`([A-Za-z0-9!#$%&*+\-./:=?@^_|~()\[\]{}]{8,})`,
			"password", "passwd", "pwd").check(genericSecret).window(0, 160),
		// The match starts at the keyword, so "client_secret" and
		// "access_token" are covered by "secret" and "token".
		ctx("secret_assignment", CategoryGeneric,
			`(?i)(?:secret|token|api[_-]?key)(?:[_-]?key)?`+assign+`([A-Za-z0-9+/=_.~-]{8,})`,
			"secret", "token", "api_key", "apikey", "api-key").check(genericKeyValue).window(0, 300),

		// --- PII ---------------------------------------------------------------
		special("credit_card", CategoryPII, kindDigits),
		special("us_ssn", CategoryPII, kindDigits),
		special("iban", CategoryPII, kindDigits),
		tok("email", CategoryEmail, `[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}`, "@").
			window(64, 360).tailBytes("%+-").check(nil).optIn(),
		special("phone", CategoryPhone, kindFullScan).withExpr(
			`(?:\+[1-9][0-9]{0,2}[ .-]?(?:\([0-9]{1,4}\)[ .-]?)?[0-9]{2,4}(?:[ .-]?[0-9]{2,4}){1,4}|\(?[0-9]{3}\)?[ .-][0-9]{3}[ .-][0-9]{4})`).
			check(validPhone).optIn(),
	}
}

func (p Pattern) optIn() Pattern { p.OptIn = true; return p }

// matcher replaces the regex with hand-written code for shapes the regex
// engine handles slowly; tests check both agree on the samples.
func (p Pattern) matcher(f func(string) []int) Pattern { p.custom = f; return p }

func (p Pattern) withExpr(e string) Pattern {
	p.expr, p.maxLen, p.leftBound, p.rightBound = e, 64, true, true
	return p
}

// compiledPatterns compiles the library once per process; the table is
// immutable after that, so sharing it between scanners is safe.
var compiledPatterns = sync.OnceValue(func() []Pattern {
	ps := patternList()
	for i := range ps {
		if ps[i].expr != "" {
			ps[i].re = regexp.MustCompile(ps[i].expr)
			ps[i].anchored = regexp.MustCompile(`^(?:` + ps[i].expr + `)`)
			if ps[i].kind == kindRegex && ps[i].group == 0 && ps[i].before == 0 {
				ps[i].simple = compileSimple(ps[i].expr)
			}
		}
	}
	return ps
})

// Patterns returns a copy of the ordered pattern library, for documentation
// endpoints and for policy editors that offer label choices.
func Patterns() []Pattern {
	ps := compiledPatterns()
	out := make([]Pattern, len(ps))
	copy(out, ps)
	return out
}

// knownLabels and knownCategories back Policy.Validate, so a typo in a bank
// policy is rejected instead of silently never matching.
var knownNames = sync.OnceValues(func() (map[string]bool, map[string]bool) {
	labels, cats := map[string]bool{}, map[string]bool{}
	for _, p := range compiledPatterns() {
		labels[p.Label] = true
		cats[p.Category] = true
	}
	return labels, cats
})
