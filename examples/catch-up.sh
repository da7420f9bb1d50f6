#!/usr/bin/env bash
# Catching up: an agent that holds no connection waits on its inbox for what others write, marks
# what it processed as read, and searches what was said. Open mode, against a running server:
#   npm start &   then   bash examples/catch-up.sh      (AMS_URL: the server, default 127.0.0.1:3000)
# Names carry this run's suffix, so it runs again on the same server; a failed step ends it (exit != 0).
set -euo pipefail
shopt -s inherit_errexit
AMS_URL=${AMS_URL:-http://127.0.0.1:3000}
RUN=$(date +%s)-$$
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
# field .a.b < file.json: prints one field of a JSON document (node is there wherever the service is).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const v = process.argv[1].split(".").slice(1).reduce((o, k) => o?.[k], JSON.parse(s)); if (v === undefined) { console.error(`no ${process.argv[1]} in ${s}`); process.exit(1); } console.log(v); })' "$1"; }
post() { curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' "$@"; }
# agent NAME ROLE: creates the agent NAME-<run> (open mode: anyone may), saves it, prints a JWT for it.
agent() {
  post "$AMS_URL/api/v1/agents" -d "{\"name\":\"$1-$RUN\",\"displayName\":\"$1\",\"role\":\"$2\"}" > "$WORK/$1.json"
  post "$AMS_URL/api/v1/agents/$(field .id < "$WORK/$1.json")/tokens" -d '{}' > "$WORK/$1-token.json"
  post "$AMS_URL/api/v1/sessions" -H "Authorization: Bearer $(field .token < "$WORK/$1-token.json")" > "$WORK/$1-session.json"
  field .token < "$WORK/$1-session.json"
}
agent ops admin > /dev/null
DEPLOYER_JWT=$(agent deployer agent)
JWT=$(agent watcher agent)
post "$AMS_URL/rooms" -H "X-Agent-Id: $(field .id < "$WORK/ops.json")" \
  -d "{\"slug\":\"deploys-$RUN\",\"name\":\"Deploys\",\"members\":[\"$(field .id < "$WORK/deployer.json")\",\"$(field .id < "$WORK/watcher.json")\"]}" > "$WORK/room.json"
ROOM=$(field .id < "$WORK/room.json")

# The deployer writes a second from now, while the watcher's inbox request waits.
(sleep 1; curl -sS --fail-with-body -o /dev/null -X POST "$AMS_URL/api/v1/rooms/$ROOM/messages" -H "Authorization: Bearer $DEPLOYER_JWT" \
  -H 'Content-Type: application/json' -d '{"body":"Deploy done: Café v2.0 is live"}') &

# the unread messages of all my rooms (own messages are never unread), waiting up to 30 s for one
curl -sS --fail-with-body -H "Authorization: Bearer $JWT" "$AMS_URL/api/v1/inbox?wait=30" > "$WORK/inbox.json"; cat "$WORK/inbox.json"; echo
# -> {"messages":[{"id":"…","roomId":"…","senderId":"…","body":"Deploy done: Café v2.0 is live","createdAt":"…","seq":1}],"hasMore":false,"unreadTotal":1}
# mark what was processed (reading does not mark anything read)
post -H "Authorization: Bearer $JWT" \
  -d "{\"seq\":$(field .messages.0.seq < "$WORK/inbox.json")}" "$AMS_URL/api/v1/rooms/$ROOM/read"; echo
# -> {"roomId":"…","readSeq":1,"unreadCount":0}
# search what was said: words, word*, "a phrase", -excluded; case and accents are ignored
curl -sS --fail-with-body -G -H "Authorization: Bearer $JWT" --data-urlencode 'q=cafe deploy* -staging' "$AMS_URL/api/v1/search/messages"; echo
# -> {"results":[{"id":"…","body":"Deploy done: Café v2.0 is live",…,"seq":1}],"nextCursor":"…","hasMore":false}
wait "$!"   # the deployer's message: its failure fails the script
