package reflect

import (
	"fmt"
	"strings"
)

// DefaultDisposition is the neutral character of a bank without a profile.
var DefaultDisposition = Disposition{Skepticism: 3, Literalism: 3, Empathy: 3}

// validate names the trait that is out of range, so the API can answer 400
// with the field.
func (d Disposition) validate() error {
	for _, t := range []struct {
		name string
		v    int
	}{{"skepticism", d.Skepticism}, {"literalism", d.Literalism}, {"empathy", d.Empathy}} {
		if t.v < 1 || t.v > 5 {
			return &RequestError{Field: "disposition." + t.name, Message: fmt.Sprintf("must be 1–5, got %d", t.v)}
		}
	}
	return nil
}

// The behaviour of each trait level, index 0 = level 1. These are
// instructions a model can follow, not adjectives: "be skeptical" changes
// nothing, "name the evidence for every claim" does.
var (
	skepticismText = [5]string{
		"Skepticism 1: Trust the memories as given. Treat every stored fact and observation as true and answer confidently without hedging.",
		"Skepticism 2: Mostly trust the memories. Mention a doubt only when two memories plainly contradict each other.",
		"Skepticism 3: Weigh the evidence. Prefer facts supported by several memories, and say so briefly when the answer rests on a single memory.",
		"Skepticism 4: Question the evidence. Point out claims supported by only one memory, and mention when an observation is weakening or stale.",
		"Skepticism 5: Be rigorous. Flag every claim that no memory supports, flag weakening or stale observations explicitly, prefer the newest evidence, and say \"I don't know\" rather than guess.",
	}
	literalismText = [5]string{
		"Literalism 1: Interpret freely. Read the question for its intent and answer what the user most likely wants to know, including useful related context.",
		"Literalism 2: Interpret generously. Answer the intent of the question and add closely related facts when they help.",
		"Literalism 3: Balance intent and wording. Answer the question as asked, inferring only what the memories make clear.",
		"Literalism 4: Stay close to the wording. Answer exactly what was asked, quote memories where possible, and avoid drawing inferences beyond them.",
		"Literalism 5: Be literal. Keep the user's exact words and the memories' exact wording, answer only the precise question, and never paraphrase or infer.",
	}
	empathyText = [5]string{
		"Empathy 1: Be strictly factual. State the answer plainly with no emotional language.",
		"Empathy 2: Be neutral and courteous. Keep the answer factual, with a polite tone.",
		"Empathy 3: Be considerate. Keep the answer factual, and note feelings or preferences when the memories record them.",
		"Empathy 4: Be warm. Take the user's recorded feelings and preferences into account and phrase the answer kindly.",
		"Empathy 5: Be deeply empathetic. Acknowledge the feelings the memories record before answering, and frame the answer with care for the person.",
	}
)

// dispositionPrompt compiles d into the system prompt's behaviour rules.
func dispositionPrompt(d Disposition) string {
	var b strings.Builder
	b.WriteString("Your disposition (follow these rules):\n- ")
	b.WriteString(skepticismText[d.Skepticism-1])
	b.WriteString("\n- ")
	b.WriteString(literalismText[d.Literalism-1])
	b.WriteString("\n- ")
	b.WriteString(empathyText[d.Empathy-1])
	b.WriteString("\n")
	return b.String()
}

// RequestError reports an invalid request field, so the HTTP layer can
// answer 400 naming it.
type RequestError struct {
	Field   string
	Message string
}

// Error names the field, so the log line says what to fix.
func (e *RequestError) Error() string { return fmt.Sprintf("reflect: %s: %s", e.Field, e.Message) }

// ParseDisposition reads "skepticism,literalism,empathy", each 1-5, as
// `memstream reflect --disposition 5,3,1` gives it.
func ParseDisposition(v string) (Disposition, error) {
	var d Disposition
	if _, err := fmt.Sscanf(v, "%d,%d,%d", &d.Skepticism, &d.Literalism, &d.Empathy); err != nil {
		return d, fmt.Errorf("want skepticism,literalism,empathy like 5,3,1: %w", err)
	}
	for _, x := range []int{d.Skepticism, d.Literalism, d.Empathy} {
		if x < 1 || x > 5 {
			return d, fmt.Errorf("each trait must be 1-5, got %s", v)
		}
	}
	return d, nil
}
