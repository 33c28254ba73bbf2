#!/usr/bin/env sh
# The command line, offline and with no API key: a short transcript through every command.
#
#   sh examples/cli_demo.sh            (needs the package installed: pip install -e .)
#
# No model is called: summaries are the no-LLM extractive ones and recall is BM25.
set -eu

LRM="${LRM:-python -m langchain_recursive_memory}"
STORE="$(mktemp -d "${TMPDIR:-/tmp}/lrm-cli-demo.XXXXXX")"
trap 'rm -rf "$STORE"' EXIT

# A JSONL transcript: one message object per line (role, content, optional id/created_at/name).
CHAT="$STORE/chat.jsonl"
echo '{"role": "user", "content": "My name is Ada and my locker code is 4471."}' >"$CHAT"
echo '{"role": "assistant", "content": "Noted, Ada."}' >>"$CHAT"
i=1
while [ "$i" -le 40 ]; do
    echo "{\"role\": \"user\", \"content\": \"Question $i: any tips for the garden in week $i?\"}" >>"$CHAT"
    echo "{\"role\": \"assistant\", \"content\": \"Answer $i: water early and mulch the beds.\"}" >>"$CHAT"
    i=$((i + 1))
done

$LRM --path "$STORE/db" ingest "$CHAT" --session ada --max-tokens 600
$LRM --path "$STORE/db" ingest "$CHAT" --session ada --max-tokens 600 --no-progress  # resumes: 0 added
$LRM --path "$STORE/db" show ada --max-tokens 600 --rows 4
$LRM --path "$STORE/db" recall ada "What is my locker code?" --max-tokens 600 -k 3
$LRM --path "$STORE/db" sessions
$LRM --path "$STORE/db" expire --older-than 30d --dry-run
$LRM --path "$STORE/db" clear ada --yes
