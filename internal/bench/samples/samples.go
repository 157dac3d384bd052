// Package samples generates synthetic secrets and chat text for the defense
// benchmark (internal/bench) and the defense tests.
package samples

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Synthetic secrets for the defense benchmark and the defense tests. They are generated at
// run time from a seeded PRNG, so the repository holds no literal
// credential-shaped strings for push-protection scanners to trip over, and
// every pattern gets a fresh, pattern-valid example on each run.

const (
	csUpper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	csLower  = "abcdefghijklmnopqrstuvwxyz"
	csDigit  = "0123456789"
	csHex    = "0123456789abcdef"
	csAlnum  = csUpper + csLower + csDigit
	csB64URL = csAlnum + "_-"
	csB64    = csAlnum + "+/"
	csBech32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
)

// Sample is a secret embedded in the minimal context its pattern needs;
// the finding is expected to cover exactly Secret.
type Sample struct {
	Pre, Secret, Post string
}

// Text is the sample as it appears in a message.
func (s Sample) Text() string { return s.Pre + s.Secret + s.Post }

type gen struct{ r *rand.Rand }

// str returns n random bytes from cs. When cs has both letters and digits,
// it plants one of each so "must mix letters and digits" validators never
// flake on an unlucky draw.
func (g gen) str(cs string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = cs[g.r.IntN(len(cs))]
	}
	if n >= 4 && strings.ContainsAny(cs, csDigit) && strings.ContainsAny(cs, csLower+csUpper) {
		b[n/2] = g.pick(cs, isDigit)
		b[n/3] = g.pick(cs, func(c byte) bool { return isUpper(c) || isLower(c) })
	}
	// Tokens never start or end with separator bytes in practice.
	for _, i := range []int{0, n - 1} {
		if n > 0 && !isAlnum(b[i]) {
			b[i] = 'x'
		}
	}
	return string(b)
}

// pick draws a byte of cs satisfying ok; cs must contain one.
func (g gen) pick(cs string, ok func(byte) bool) byte {
	for {
		if c := cs[g.r.IntN(len(cs))]; ok(c) {
			return c
		}
	}
}

func (g gen) digits(n int) string {
	s := g.str(csDigit, n)
	if s[0] == '0' {
		s = "7" + s[1:]
	}
	return s
}

func (g gen) uuid() string {
	return g.str(csHex, 8) + "-" + g.str(csHex, 4) + "-" + g.str(csHex, 4) + "-" + g.str(csHex, 4) + "-" + g.str(csHex, 12)
}

func (g gen) card() string {
	d := "4" + g.str(csDigit, 14)
	for c := '0'; c <= '9'; c++ {
		if luhn(d + string(c)) {
			d += string(c)
			break
		}
	}
	return d[0:4] + " " + d[4:8] + " " + d[8:12] + " " + d[12:16]
}

func (g gen) ssn() string {
	return fmt.Sprintf("%03d-%02d-%04d", 1+g.r.IntN(665), 1+g.r.IntN(99), 1+g.r.IntN(9999))
}

func (g gen) iban() string {
	bban := g.str(csDigit, 18)
	rem := 0
	for _, c := range bban + "131400" { // D=13 E=14, check digits 00
		rem = (rem*10 + int(c-'0')) % 97
	}
	iban := "DE" + fmt.Sprintf("%02d", 98-rem) + bban
	var b strings.Builder
	for i := 0; i < len(iban); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(iban[i:min(i+4, len(iban))])
	}
	return b.String()
}

func (g gen) pem(kind string, lines int, end bool) string {
	var b strings.Builder
	b.WriteString("-----BEGIN " + kind + "PRIVATE KEY-----\n")
	for i := 0; i < lines; i++ {
		b.WriteString(g.str(csB64, 64) + "\n")
	}
	b.WriteString(g.str(csB64, 20) + "==")
	if end {
		b.WriteString("\n-----END " + kind + "PRIVATE KEY-----")
	}
	return b.String()
}

func b64j(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// For returns a positive example for label, or false if the label has no
// generator (the defense tests fail on that, so no pattern can be dead).
func For(r *rand.Rand, label string) (Sample, bool) {
	g := gen{r}
	t := func(s string) (Sample, bool) { return Sample{Secret: s}, true }
	c := func(pre, s, post string) (Sample, bool) { return Sample{pre, s, post}, true }
	switch label {
	case "anthropic_api_key":
		return t("sk-ant-api03-" + g.str(csB64URL, 93) + "AA")
	case "openrouter_api_key":
		return t("sk-or-v1-" + g.str(csHex, 64))
	case "openai_project_key":
		return t("sk-proj-" + g.str(csB64URL, 156))
	case "openai_admin_key":
		return t("sk-admin-" + g.str(csB64URL, 60))
	case "openai_service_account_key":
		return t("sk-svcacct-" + g.str(csB64URL, 60))
	case "openai_legacy_key":
		return t("sk-" + g.str(csAlnum, 20) + "T3BlbkFJ" + g.str(csAlnum, 20))
	case "openai_api_key":
		return t("sk-" + g.str(csAlnum, 48))
	case "google_api_key":
		return t("AIza" + g.str(csB64URL, 35))
	case "google_oauth_access_token":
		return t("ya29." + g.str(csB64URL, 120))
	case "google_oauth_client_secret":
		return t("GOCSPX-" + g.str(csB64URL, 28))
	case "xai_api_key":
		return t("xai-" + g.str(csAlnum, 80))
	case "groq_api_key":
		return t("gsk_" + g.str(csAlnum, 52))
	case "huggingface_token":
		return t("hf_" + g.str(csAlnum, 34))
	case "replicate_api_token":
		return t("r8_" + g.str(csAlnum, 37))
	case "perplexity_api_key":
		return t("pplx-" + g.str(csAlnum, 48))
	case "databricks_token":
		return t("dapi" + g.str(csHex, 32))
	case "langsmith_api_key":
		return t("lsv2_pt_" + g.str(csHex, 32) + "_" + g.str(csHex, 10))
	case "pinecone_api_key":
		return t("pcsk_" + g.str(csAlnum, 5) + "_" + g.str(csAlnum, 60))
	case "tavily_api_key":
		return t("tvly-" + g.str(csAlnum, 32))
	case "aws_access_key_id":
		return t("AKIA" + g.str(csUpper+"234567", 16))
	case "aws_secret_access_key":
		return c("aws_secret_access_key = ", g.str(csB64, 40), "")
	case "aws_session_token":
		return c("AWS_SESSION_TOKEN=", g.str(csB64, 300), "")
	case "aws_sts_session_token":
		return t("IQoJb3JpZ2luX2Vj" + g.str(csB64, 300))
	case "gcp_service_account_key":
		key := strings.ReplaceAll(g.pem("", 12, true), "\n", `\n`) + `\n`
		return c(`{"type": "service_account", "private_key_id": "`+g.str(csHex, 40)+`", "private_key": "`, key,
			`", "client_email": "svc@proj.iam.gserviceaccount.com"}`)
	case "azure_storage_account_key":
		return c("DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=", g.str(csB64, 86)+"==", ";EndpointSuffix=core.windows.net")
	case "azure_shared_access_key":
		return c("Endpoint=sb://ns1.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=", g.str(csB64, 43)+"=", "")
	case "azure_client_secret":
		return t(g.str(csAlnum, 3) + g.str(csDigit, 1) + "Q~" + g.str(csAlnum+"_~.-", 34))
	case "digitalocean_pat":
		return t("dop_v1_" + g.str(csHex, 64))
	case "digitalocean_oauth_token":
		return t("doo_v1_" + g.str(csHex, 64))
	case "digitalocean_refresh_token":
		return t("dor_v1_" + g.str(csHex, 64))
	case "heroku_api_key":
		return t("HRKU-AA" + g.str(csB64URL, 58))
	case "heroku_api_key_legacy":
		return c("HEROKU_API_KEY=", g.uuid(), "")
	case "cloudflare_api_token":
		return c("CLOUDFLARE_API_TOKEN=", g.str(csB64URL, 40), "")
	case "cloudflare_origin_ca_key":
		return t("v1.0-" + g.str(csHex, 24) + "-" + g.str(csHex, 146))
	case "vault_token":
		return t("hvs." + g.str(csB64URL, 95))
	case "terraform_cloud_token":
		return t(g.str(csAlnum, 14) + ".atlasv1." + g.str(csAlnum, 67))
	case "doppler_token":
		return t("dp.pt." + g.str(csAlnum, 43))
	case "pulumi_access_token":
		return t("pul-" + g.str(csHex, 40))
	case "supabase_access_token":
		return t("sbp_" + g.str(csHex, 40))
	case "grafana_service_account_token":
		return t("glsa_" + g.str(csAlnum, 32) + "_" + g.str(csHex, 8))
	case "grafana_cloud_token":
		return t("glc_" + g.str(csAlnum, 80) + "=")
	case "newrelic_user_api_key":
		return t("NRAK-" + g.str(csUpper+csDigit, 27))
	case "sentry_auth_token":
		return t("sntryu_" + g.str(csHex, 64))
	case "github_fine_grained_pat":
		return t("github_pat_" + g.str(csAlnum, 22) + "_" + g.str(csAlnum, 59))
	case "github_pat":
		return t("ghp_" + g.str(csAlnum, 36))
	case "github_oauth_token":
		return t("gho_" + g.str(csAlnum, 36))
	case "github_user_to_server_token":
		return t("ghu_" + g.str(csAlnum, 36))
	case "github_app_token":
		return t("ghs_" + g.str(csAlnum, 36))
	case "github_refresh_token":
		return t("ghr_" + g.str(csAlnum, 76))
	case "gitlab_pat":
		return t("glpat-" + g.str(csB64URL, 20))
	case "gitlab_runner_token":
		return t("glrt-" + g.str(csB64URL, 20))
	case "gitlab_pipeline_trigger_token":
		return t("glptt-" + g.str(csHex, 40))
	case "gitlab_deploy_token":
		return t("gldt-" + g.str(csB64URL, 20))
	case "bitbucket_app_password":
		return t("ATBB" + g.str(csAlnum, 32))
	case "atlassian_api_token":
		return t("ATATT3" + g.str(csAlnum+"_-", 180) + "=" + g.str(csHex, 8))
	case "npm_token":
		return t("npm_" + g.str(csAlnum, 36))
	case "pypi_token":
		return t("pypi-AgEIcHlwaS5vcmc" + g.str(csB64URL, 150))
	case "dockerhub_pat":
		return t("dckr_pat_" + g.str(csB64URL, 27))
	case "stripe_secret_key":
		return t("sk_live_" + g.str(csAlnum, 99))
	case "stripe_restricted_key":
		return t("rk_live_" + g.str(csAlnum, 99))
	case "stripe_webhook_secret":
		return t("whsec_" + g.str(csB64, 32))
	case "square_access_token":
		return t("EAAA" + g.str(csAlnum, 60))
	case "square_oauth_secret":
		return t("sq0csp-" + g.str(csB64URL, 43))
	case "braintree_access_token":
		return t("access_token$production$" + g.str(csLower+csDigit, 16) + "$" + g.str(csHex, 32))
	case "shopify_access_token":
		return t("shpat_" + g.str(csHex, 32))
	case "shopify_shared_secret":
		return t("shpss_" + g.str(csHex, 32))
	case "shopify_custom_app_token":
		return t("shpca_" + g.str(csHex, 32))
	case "shopify_private_app_token":
		return t("shppa_" + g.str(csHex, 32))
	case "slack_bot_token":
		return t("xoxb-" + g.digits(12) + "-" + g.digits(13) + "-" + g.str(csAlnum, 24))
	case "slack_user_token":
		return t("xoxp-" + g.digits(12) + "-" + g.digits(12) + "-" + g.digits(13) + "-" + g.str(csHex, 32))
	case "slack_app_token":
		return t("xapp-1-A" + g.str(csUpper+csDigit, 10) + "-" + g.digits(13) + "-" + g.str(csHex, 64))
	case "slack_token":
		return t("xoxs-" + g.digits(12) + "-" + g.str(csAlnum, 40))
	case "slack_webhook_url":
		return t("https://hooks.slack.com/services/T" + g.str(csUpper+csDigit, 8) + "/B" + g.str(csUpper+csDigit, 8) + "/" + g.str(csAlnum, 24))
	case "discord_webhook_url":
		return t("https://discord.com/api/webhooks/" + g.digits(18) + "/" + g.str(csB64URL, 68))
	case "discord_bot_token":
		return c("DISCORD_BOT_TOKEN=", "M"+g.str(csB64URL, 25)+"."+g.str(csB64URL, 6)+"."+g.str(csB64URL, 38), "")
	case "telegram_bot_token":
		return t(g.digits(10) + ":AA" + g.str(csB64URL, 33))
	case "twilio_api_key":
		return t("SK" + g.str(csHex, 32))
	case "twilio_account_sid":
		return t("AC" + g.str(csHex, 32))
	case "twilio_auth_token":
		return c("TWILIO_AUTH_TOKEN=", g.str(csHex, 32), "")
	case "sendgrid_api_key":
		return t("SG." + g.str(csB64URL, 22) + "." + g.str(csB64URL, 43))
	case "mailgun_api_key":
		return t("key-" + g.str(csHex, 32))
	case "mailgun_signing_key":
		return c("MAILGUN_API_KEY=", g.str(csHex, 32)+"-"+g.str(csHex, 8)+"-"+g.str(csHex, 8), "")
	case "mailchimp_api_key":
		return t(g.str(csHex, 32) + "-us21")
	case "linear_api_key":
		return t("lin_api_" + g.str(csAlnum, 40))
	case "postman_api_key":
		return t("PMAK-" + g.str(csHex, 24) + "-" + g.str(csHex, 34))
	case "notion_token":
		return t("ntn_" + g.digits(11) + g.str(csAlnum, 35))
	case "postgres_url_password":
		return c("postgres://app_user:", g.str(csAlnum, 16), "@db.internal:5432/memstream?sslmode=require")
	case "mysql_url_password":
		return c("mysql://root:", g.str(csAlnum, 16), "@10.0.0.7:3306/shop")
	case "mongodb_url_password":
		return c("mongodb+srv://svc:", g.str(csAlnum, 16), "@cluster0.ab1cd.mongodb.net/app")
	case "redis_url_password":
		return c("rediss://:", g.str(csAlnum, 24), "@cache.internal:6380/0")
	case "amqp_url_password":
		return c("amqps://worker:", g.str(csAlnum, 16), "@mq.internal:5671/vhost")
	case "url_basic_auth_password":
		return c("https://deploy:", g.str(csAlnum, 20), "@git.corp.net/repo.git")
	case "private_key_block":
		return t(g.pem("RSA ", 10, true))
	case "private_key_block_truncated":
		return c("", g.pem("OPENSSH ", 3, false), "\n\n(rest omitted)")
	case "age_secret_key":
		return t("AGE-SECRET-KEY-1" + g.str(csBech32, 58))
	case "jwt":
		return t(b64j(`{"alg":"HS256","typ":"JWT"}`) + "." + b64j(`{"sub":"`+g.digits(10)+`","name":"Ada","iat":1516239022}`) + "." + g.str(csB64URL, 43))
	case "password_assignment":
		return c("DB_PASSWORD=", g.str(csAlnum+"!#&*", 14), "")
	case "secret_assignment":
		return c("client_secret: ", g.str(csAlnum, 32), "")
	case "credit_card":
		return t(g.card())
	case "us_ssn":
		return t(g.ssn())
	case "iban":
		return t(g.iban())
	case "email":
		return t(g.str(csLower, 8) + "." + g.str(csLower, 5) + "@corp-mail.net")
	case "phone":
		return t("+1 415 " + strconv.Itoa(200+g.r.IntN(700)) + " " + g.digits(4))
	}
	return Sample{}, false
}

// Planted records where Corpus put a secret and what it should be
// labelled.
type Planted struct {
	Label      string
	Start, End int
}

// cleanLines are ordinary chat turns, including the near misses a naive
// scanner flags: commit SHAs, UUIDs, base64 images, "task-1234",
// "skeleton", token counts, URLs without credentials, decimals and dates.
var cleanLines = []string{
	"user: Can you summarize the meeting notes from Tuesday and list the action items?",
	"assistant: Sure. The team agreed to ship the recall API by 2024-06-14 and to review PR #4821 on Friday at 10:30.",
	"user: The commit %SHA% fixed the flaky test in the consumer package.",
	"assistant: Request %UUID% took 231 ms; p99 latency is 412 ms over 10,000 requests.",
	"user: Remember that I prefer green tea over coffee, and my daughter's birthday is in March.",
	"assistant: The task-1234 ticket says the skeleton loader should ask for a token budget of 4096 tokens.",
	"user: Use max_tokens: 1024 and temperature 0.2 for the summarizer; the tokenizer is cl100k_base.",
	"assistant: Order 10023-88 costs $1,299.99 and ships in 3-5 business days.",
	"user: See https://docs.memstream.dev/guide?section=3#recall for details on the API.",
	"user: ![chart](data:image/png;base64,%B64%)",
	"assistant: The password field on the login form should show a strength meter.",
	"user: I moved to Berlin last year and now work as a data engineer at a logistics startup.",
	"assistant: Set the secret name in the Helm chart, not the secret itself.",
	"assistant: ```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```",
	"user: Version 1.22.3 of the client fixed the rebalance bug; upgrade from 1.21.0.",
	"assistant: The desk-top app and the ask-me-anything session moved to room 4B.",
	"user: Our Postgres runs at postgres://db.internal:5432/app with IAM auth, no static password.",
	"user: 我们明天下午三点在会议室讨论新的推荐系统架构。",
	"assistant: 请把上周的销售数据整理成表格，按地区汇总。",
	"user: 我喜欢周末去爬山，最近去了黄山，风景非常漂亮。",
	"assistant: 这个接口的延迟是 120 毫秒，需要优化到 50 毫秒以内。",
	"user: 用户反馈说登录页面的密码提示不够清楚，请在 v2.3 里修复。",
	"assistant: The order number 4111 1111 1111 1112 failed the checksum, so it is not a card.",
}

// plantWrappers put a secret where chat users paste them: after prose, glued
// to CJK, in inline code, on its own line.
var plantWrappers = [][2]string{
	{"user: here it is ", " thanks"},
	{"user: 我的key是", "谢谢"},
	{"user: try `", "` please"},
	{"user: config below\n", "\nend of config"},
}

// Corpus builds about size bytes of chat text. With dense set, every clean
// line is followed by a line with a pattern-valid fake secret, cycling
// through labels (the defense scanner's default-on ones, as a rule).
func Corpus(r *rand.Rand, size int, dense bool, labels []string) (string, []Planted) {
	g := gen{r}
	var b strings.Builder
	b.Grow(size + 4096)
	var out []Planted
	for i := 0; b.Len() < size; i++ {
		line := cleanLines[r.IntN(len(cleanLines))]
		line = strings.ReplaceAll(line, "%SHA%", g.str(csHex, 40))
		line = strings.ReplaceAll(line, "%UUID%", g.uuid())
		line = strings.ReplaceAll(line, "%B64%", g.str(csB64, 200))
		b.WriteString(line)
		b.WriteByte('\n')
		if !dense {
			continue
		}
		label := labels[i%len(labels)]
		smp, _ := For(r, label)
		w := plantWrappers[r.IntN(len(plantWrappers))]
		b.WriteString(w[0])
		b.WriteString(smp.Pre)
		start := b.Len()
		b.WriteString(smp.Secret)
		out = append(out, Planted{Label: label, Start: start, End: b.Len()})
		b.WriteString(smp.Post)
		b.WriteString(w[1])
		b.WriteByte('\n')
	}
	return b.String(), out
}

// The byte classes and the Luhn check are written again here rather than
// taken from package defense: the defense tests import this package, and a
// generator that shared the checker's code would share its bugs.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) || isLower(c) }

// luhn reports whether a string of digits passes the Luhn checksum.
func luhn(digits string) bool {
	sum := 0
	for i := range len(digits) {
		d := int(digits[len(digits)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
