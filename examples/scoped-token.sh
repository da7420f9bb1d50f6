#!/usr/bin/env bash
# Scoped tokens: a bot whose API token may only read one room (docs/scopes.md).
# From the repository, against a running server (AMS_URL, default http://127.0.0.1:3000) and, for
# `ams`, its database (DATABASE_URL, as the server has it):
#   npm start &   then   bash examples/scoped-token.sh
# Names carry this run's suffix, so it runs again on the same server; a failed step ends it (exit != 0).
set -euo pipefail
shopt -s inherit_errexit
AMS_URL=${AMS_URL:-http://127.0.0.1:3000}
RUN=$(date +%s)-$$
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const v = process.argv[1].split(".").slice(1).reduce((o, k) => o?.[k], JSON.parse(s)); if (v === undefined) { console.error(`no ${process.argv[1]} in ${s}`); process.exit(1); } console.log(v); })' "$1"; }
json() { curl -sS --fail-with-body -H 'Content-Type: application/json' "$@"; }

# An admin (from the command line), a bot and a room with the bot in it.
npm run --silent ams -- admin create --name "root-$RUN" > "$WORK/admin.json"
ADMIN_JWT=$(json -X POST "$AMS_URL/api/v1/sessions" -d "{\"apiToken\":\"$(field .token.token < "$WORK/admin.json")\"}" | field .token)
BOT_ID=$(json -X POST "$AMS_URL/api/v1/agents" -H "Authorization: Bearer $ADMIN_JWT" -d "{\"name\":\"reader-bot-$RUN\",\"displayName\":\"Reader\",\"role\":\"agent\"}" | field .id)
ROOM_ID=$(json -X POST "$AMS_URL/rooms" -H "Authorization: Bearer $ADMIN_JWT" -d "{\"slug\":\"ops-$RUN\",\"name\":\"Ops\",\"members\":[\"$BOT_ID\"]}" | field .id)

json -X POST "$AMS_URL/api/v1/agents/$BOT_ID/tokens" -H "Authorization: Bearer $ADMIN_JWT" \
  -d '{"scopes":{"actions":["messages:read","rooms:read"],"rooms":["'"$ROOM_ID"'"]}}' > "$WORK/bot-token.json"
BOT_JWT=$(json -X POST "$AMS_URL/api/v1/sessions" -d "{\"apiToken\":\"$(field .token < "$WORK/bot-token.json")\"}" | field .token)

# Reading the room is granted; sending is not (the 403 is the point here: no --fail-with-body).
curl -sS --fail-with-body -o /dev/null -w '%{http_code}\n' "$AMS_URL/api/v1/rooms/$ROOM_ID/messages" -H "Authorization: Bearer $BOT_JWT"   # 200
curl -sS -H 'Content-Type: application/json' -X POST "$AMS_URL/api/v1/rooms/$ROOM_ID/messages" -H "Authorization: Bearer $BOT_JWT" -d '{"body":"hi"}'; echo
# 403 {"error":"This token does not grant messages:write","details":{"scope":"messages:write required"}}
