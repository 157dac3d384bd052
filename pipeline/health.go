package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// laneReport is what the watchdog knows about one lane's oldest step.
type laneReport struct {
	lane  string
	stage string
	w     work
	age   time.Duration
	stuck bool
}

// reports returns, per lane, its oldest unfinished step (if any).
func (p *Pipeline) reports(now time.Time) []laneReport {
	var out []laneReport
	for _, l := range p.lanes() {
		l.mu.Lock()
		var best *laneReport
		for stage, w := range l.working {
			if best == nil || w.since.Before(best.w.since) {
				best = &laneReport{lane: l.name, stage: stage, w: *w}
			}
		}
		l.mu.Unlock()
		if best == nil {
			out = append(out, laneReport{lane: l.name})
			continue
		}
		best.age = now.Sub(best.w.since)
		best.stuck = best.age >= p.cfg.MaxEventSeconds
		out = append(out, *best)
	}
	return out
}

// unavailableStages lists the stages currently stalled on an auth or
// configuration error, with that error.
func (p *Pipeline) unavailableStages() map[string]error {
	out := map[string]error{}
	for _, l := range p.lanes() {
		l.mu.Lock()
		for stage, w := range l.working {
			if w.class == faultUnavailable && w.err != nil {
				out[stage] = w.err
			}
		}
		l.mu.Unlock()
	}
	return out
}

// Ready reports whether ingest is making progress: an error names every
// lane stuck for pipeline.max_event_seconds (lane, stage, record and the
// last error) and every stage stalled on an auth or configuration error.
// It is one of the /health/ready checks of the ingest role.
func (p *Pipeline) Ready(context.Context) error {
	var msgs []string
	for stage, err := range p.unavailableStages() {
		msgs = append(msgs, fmt.Sprintf("%s: provider unavailable: %v", stage, err))
	}
	for _, r := range p.reports(time.Now()) {
		if r.stuck {
			msgs = append(msgs, r.describe())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	slices.Sort(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

func (r laneReport) describe() string {
	s := fmt.Sprintf("lane %s stuck for %s at %s/%d@%d (bank %s) in %s", r.lane, r.age.Round(time.Second),
		r.w.topic, r.w.partition, r.w.offset, r.w.bank, r.stage)
	if r.w.err != nil {
		s += ": " + r.w.err.Error()
	}
	return s
}

// watchdog refreshes the lane gauges and logs every lane that becomes
// stuck, once, until ctx ends.
func (p *Pipeline) watchdog(ctx context.Context) {
	period := min(time.Second, p.cfg.MaxEventSeconds/4)
	t := time.NewTicker(period)
	defer t.Stop()
	stuck := map[string]laneReport{}
	for {
		select {
		case <-ctx.Done():
			for lane, r := range stuck {
				p.m.stuckOffset.DeleteLabelValues(lane, r.w.topic, strconv.Itoa(int(r.w.partition)), r.stage)
			}
			return
		case <-t.C:
		}
		p.observe(time.Now(), stuck)
	}
}

func (p *Pipeline) observe(now time.Time, stuck map[string]laneReport) {
	for _, r := range p.reports(now) {
		p.m.laneBusy.WithLabelValues(r.lane).Set(r.age.Seconds())
		prev, was := stuck[r.lane]
		if was && (!r.stuck || !prev.w.since.Equal(r.w.since) || prev.w.offset != r.w.offset || prev.w.topic != r.w.topic ||
			prev.w.partition != r.w.partition || prev.stage != r.stage) {
			p.m.stuckOffset.DeleteLabelValues(r.lane, prev.w.topic, strconv.Itoa(int(prev.w.partition)), prev.stage)
			delete(stuck, r.lane)
			if !r.stuck {
				p.log.Info("pipeline lane moving again", slog.String("lane", r.lane))
			}
		}
		if !r.stuck {
			p.m.laneStuck.WithLabelValues(r.lane).Set(0)
			continue
		}
		p.m.laneStuck.WithLabelValues(r.lane).Set(1)
		p.m.stuckOffset.WithLabelValues(r.lane, r.w.topic, strconv.Itoa(int(r.w.partition)), r.stage).Set(float64(r.w.offset))
		if _, ok := stuck[r.lane]; !ok {
			p.log.Error("pipeline lane stuck", slog.String("lane", r.lane), slog.String("stage", r.stage),
				slog.String("topic", r.w.topic), slog.Int("partition", int(r.w.partition)), slog.Int64("offset", r.w.offset),
				slog.String("bank", r.w.bank), slog.Duration("for", r.age), slog.Any("error", r.w.err))
		}
		stuck[r.lane] = r
	}
	un := p.unavailableStages()
	for _, stage := range []string{stagePrepare, stageExtract, stageEmbed, stageResolve, stagePersist, stageDeadLetter} {
		v := 0.0
		if _, ok := un[stage]; ok {
			v = 1
		}
		p.m.unavailable.WithLabelValues(stage).Set(v)
	}
}
