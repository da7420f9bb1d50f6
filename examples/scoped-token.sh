#!/bin/sh
# Scoped tokens: a bot whose API token may only read one room (PHASE2.md 6.2).
# From the repository, against a server on a fresh database with the same DATABASE_URL (for `ams`):
#   npm start &   then   sh examples/scoped-token.sh      (AMS_URL: the server, default 127.0.0.1:3000)
set -eu
AMS_URL=${AMS_URL:-http://127.0.0.1:3000}
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(process.argv[1].split(".").slice(1).reduce((o, k) => o[k], JSON.parse(s))))' "$1"; }
json() { curl -s -H 'Content-Type: application/json' "$@"; }

# An admin (from the command line), a bot and a room with the bot in it.
npm run --silent ams -- admin create --name root > "$WORK/admin.json"
ADMIN_JWT=$(json -X POST "$AMS_URL/api/v1/sessions" -d "{\"apiToken\":\"$(field .token.token < "$WORK/admin.json")\"}" | field .token)
BOT_ID=$(json -X POST "$AMS_URL/api/v1/agents" -H "Authorization: Bearer $ADMIN_JWT" -d '{"name":"reader-bot","displayName":"Reader","role":"agent"}' | field .id)
ROOM_ID=$(json -X POST "$AMS_URL/rooms" -H "Authorization: Bearer $ADMIN_JWT" -d "{\"slug\":\"ops\",\"name\":\"Ops\",\"members\":[\"$BOT_ID\"]}" | field .id)

curl -s -X POST "$AMS_URL/api/v1/agents/$BOT_ID/tokens" -H "Authorization: Bearer $ADMIN_JWT" -H 'Content-Type: application/json' \
  -d '{"scopes":{"actions":["messages:read","rooms:read"],"rooms":["'"$ROOM_ID"'"]}}' > "$WORK/bot-token.json"
BOT_JWT=$(json -X POST "$AMS_URL/api/v1/sessions" -d "{\"apiToken\":\"$(field .token < "$WORK/bot-token.json")\"}" | field .token)

# Reading the room is granted; sending is not.
curl -s -o /dev/null -w '%{http_code}\n' "$AMS_URL/api/v1/rooms/$ROOM_ID/messages" -H "Authorization: Bearer $BOT_JWT"   # 200
json -X POST "$AMS_URL/api/v1/rooms/$ROOM_ID/messages" -H "Authorization: Bearer $BOT_JWT" -d '{"body":"hi"}'; echo
# 403 {"error":"This token does not grant messages:write","details":{"scope":"messages:write required"}}
