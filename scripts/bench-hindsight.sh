#!/usr/bin/env bash
# bench-hindsight.sh runs memstream and Hindsight side by side on this
# machine (docs/BENCHMARKS.md, "compare"): it installs hindsight-api-slim
# 1.1.0 from PyPI into a virtualenv under .cache/bench-hindsight (gitignored),
# makes sure PostgreSQL and pgvector are installed (scripts/install-deps.sh),
# builds memstream, and runs `memstream bench compare`, which starts a
# PostgreSQL server of its own for each system on free ports, one fake
# OpenAI-compatible embeddings server both use, and both systems, then
# feeds them the same events through the same REST route in interleaved
# rounds. Extra arguments go to `memstream bench compare` (--events,
# --banks, --queries, --rounds, --timeout, --llm fake, --llm-latency):
# without --llm, Hindsight runs its no-LLM chunks mode beside memstream's
# offline extractor; with --llm fake both extract and consolidate through
# the fake LLM (Hindsight: HINDSIGHT_API_LLM_PROVIDER=openai, strict
# schemas), so they do comparable work.
#
# `scripts/bench-hindsight.sh eval DIR [flags]` instead asks Hindsight the
# recall evaluation (docs/EVALUATION.md, "Against Hindsight"): `memstream
# eval run DIR --target hindsight --ingest retain` with the same install,
# Hindsight embedding with memstream's configured (default: local) model.
#
# Not part of `make test`: it takes minutes and downloads Hindsight.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.cache/bench-hindsight"
log() { printf 'bench-hindsight: %s\n' "$*" >&2; }

"$ROOT/scripts/install-deps.sh" >&2
mkdir -p "$CACHE"
if [ ! -x "$CACHE/venv/bin/hindsight-api" ]; then
	log "installing hindsight-api-slim==1.1.0 into $CACHE/venv"
	python3 -m venv "$CACHE/venv"
	"$CACHE/venv/bin/pip" install --quiet "hindsight-api-slim==1.1.0"
fi
log "building memstream"
(cd "$ROOT" && go build -o "$CACHE/memstream" ./cmd/memstream)
log "uptime: $(uptime)"
if [ "${1:-}" = eval ]; then
	shift
	"$CACHE/memstream" eval run "$@" --target hindsight --ingest retain --hindsight-bin "$CACHE/venv/bin/hindsight-api"
	log "uptime: $(uptime)"
	exit
fi
"$CACHE/memstream" bench compare --hindsight-bin "$CACHE/venv/bin/hindsight-api" "$@"
log "uptime: $(uptime)"
