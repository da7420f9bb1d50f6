#!/bin/sh
# Catching up: an agent that holds no connection waits on its inbox for what others write, marks
# what it processed as read, and searches what was said. Open mode, against a server on a fresh
# database:   npm start &   then   sh examples/catch-up.sh      (AMS_URL: the server, default 127.0.0.1:3000)
set -eu
AMS_URL=${AMS_URL:-http://127.0.0.1:3000}
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
# field .a.b < file.json: prints one field of a JSON document (node is there wherever the service is).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(process.argv[1].split(".").slice(1).reduce((o, k) => o[k], JSON.parse(s))))' "$1"; }
# agent NAME ROLE: creates the agent (open mode: anyone may), saves it, prints a JWT for it.
agent() {
  curl -s -X POST "$AMS_URL/api/v1/agents" -H 'Content-Type: application/json' \
    -d "{\"name\":\"$1\",\"displayName\":\"$1\",\"role\":\"$2\"}" > "$WORK/$1.json"
  curl -s -X POST "$AMS_URL/api/v1/agents/$(field .id < "$WORK/$1.json")/tokens" -H 'Content-Type: application/json' -d '{}' > "$WORK/$1-token.json"
  curl -s -X POST "$AMS_URL/api/v1/sessions" -H "Authorization: Bearer $(field .token < "$WORK/$1-token.json")" | field .token
}
agent ops admin > /dev/null
DEPLOYER_JWT=$(agent deployer agent)
JWT=$(agent watcher agent)
curl -s -X POST "$AMS_URL/rooms" -H "X-Agent-Id: $(field .id < "$WORK/ops.json")" -H 'Content-Type: application/json' \
  -d "{\"slug\":\"deploys\",\"name\":\"Deploys\",\"members\":[\"$(field .id < "$WORK/deployer.json")\",\"$(field .id < "$WORK/watcher.json")\"]}" > "$WORK/room.json"
ROOM=$(field .id < "$WORK/room.json")

# The deployer writes a second from now, while the watcher's inbox request waits.
(sleep 1; curl -s -o /dev/null -X POST "$AMS_URL/api/v1/rooms/$ROOM/messages" -H "Authorization: Bearer $DEPLOYER_JWT" \
  -H 'Content-Type: application/json' -d '{"body":"Deploy done: Café v2.0 is live"}') &

# the unread messages of all my rooms (own messages are never unread), waiting up to 30 s for one
curl -s -H "Authorization: Bearer $JWT" "$AMS_URL/api/v1/inbox?wait=30" > "$WORK/inbox.json"; cat "$WORK/inbox.json"; echo
# -> {"messages":[{"id":"…","roomId":"…","senderId":"…","body":"Deploy done: Café v2.0 is live","createdAt":"…","seq":1}],"hasMore":false,"unreadTotal":1}
# mark what was processed (reading does not mark anything read)
curl -s -X POST -H "Authorization: Bearer $JWT" -H 'Content-Type: application/json' \
  -d "{\"seq\":$(field .messages.0.seq < "$WORK/inbox.json")}" "$AMS_URL/api/v1/rooms/$ROOM/read"; echo
# -> {"roomId":"…","readSeq":1,"unreadCount":0}
# search what was said: words, word*, "a phrase", -excluded; case and accents are ignored
curl -s -G -H "Authorization: Bearer $JWT" --data-urlencode 'q=cafe deploy* -staging' "$AMS_URL/api/v1/search/messages"; echo
# -> {"results":[{"id":"…","body":"Deploy done: Café v2.0 is live",…,"seq":1}],"nextCursor":"…","hasMore":false}
wait
