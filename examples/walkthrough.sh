#!/bin/sh
# Walk-through: an admin, an agent, its API token and JWT, a room, messages, history, revocation.
# From the repository, against a server on a fresh database with the same DATABASE_URL (for `ams`):
#   npm start &   then   sh examples/walkthrough.sh      (AMS_URL: the server, default 127.0.0.1:3000)
set -eu
B=${AMS_URL:-http://127.0.0.1:3000}
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
# field .a.b < file.json: prints one field of a JSON document (node is there wherever the service is).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(process.argv[1].split(".").slice(1).reduce((o, k) => o[k], JSON.parse(s))))' "$1"; }

# 1. The first admin, from the command line (prints the agent and its API token once).
npm run --silent ams -- admin create --name root > "$WORK/admin.json"
curl -s -X POST "$B/api/v1/sessions" -H "Authorization: Bearer $(field .token.token < "$WORK/admin.json")" > "$WORK/admin-session.json"
ADMIN_JWT=$(field .token < "$WORK/admin-session.json")

# 2. An agent, and an API token for it (the token is shown only in this response). The admin JWT is
#    needed in strict mode only; in open mode anyone may call these.
curl -s -X POST "$B/api/v1/agents" -H "Authorization: Bearer $ADMIN_JWT" -H 'Content-Type: application/json' \
  -d '{"name":"alice","displayName":"Alice","role":"agent"}' > "$WORK/alice.json"
ALICE_ID=$(field .id < "$WORK/alice.json")
curl -s -X POST "$B/api/v1/agents/$ALICE_ID/tokens" -H "Authorization: Bearer $ADMIN_JWT" -H 'Content-Type: application/json' \
  -d '{"scopes":{}}' > "$WORK/alice-token.json"
ALICE_TOKEN=$(field .token < "$WORK/alice-token.json")      # agt_522978e81967_4dcf...
ALICE_PREFIX=$(field .prefix < "$WORK/alice-token.json")    # agt_522978e81967

# 3. Exchange it for a JWT (header form in step 1, body form here).
curl -s -X POST "$B/api/v1/sessions" -H 'Content-Type: application/json' \
  -d "{\"apiToken\":\"$ALICE_TOKEN\"}" > "$WORK/alice-session.json"
ALICE_JWT=$(field .token < "$WORK/alice-session.json")
echo "session expires at $(field .expiresAt < "$WORK/alice-session.json")"

# 4. A room with alice in it, created by an admin: its JWT, or in open mode -H "X-Agent-Id: <admin id>".
curl -s -X POST "$B/rooms" -H "Authorization: Bearer $ADMIN_JWT" -H 'Content-Type: application/json' \
  -d "{\"slug\":\"general\",\"name\":\"General\",\"members\":[\"$ALICE_ID\"]}" > "$WORK/room.json"
ROOM_ID=$(field .id < "$WORK/room.json")

# 5. Send two messages.
for text in 'Hello, room!' 'Second message'; do
  curl -s -X POST "$B/api/v1/rooms/$ROOM_ID/messages" -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $ALICE_JWT" -d "{\"body\":\"$text\"}"
  echo
done
# -> {"id":"01a1fe34-2c4d-...","roomId":"01a1fe34-2bf4-...","senderId":"01a1fe34-2a98-...","body":"Hello, room!","createdAt":"2026-11-21T13:03:14.509Z","seq":1}

# 6. Read the history, newest first, one message per page, following nextCursor.
curl -s "$B/api/v1/rooms/$ROOM_ID/messages?limit=1" -H "Authorization: Bearer $ALICE_JWT" > "$WORK/page1.json"
echo "page 1: $(field .messages.0.body < "$WORK/page1.json"), hasMore $(field .hasMore < "$WORK/page1.json")"
CURSOR=$(field .nextCursor < "$WORK/page1.json")
curl -s "$B/api/v1/rooms/$ROOM_ID/messages?limit=1&cursor=$CURSOR" -H "Authorization: Bearer $ALICE_JWT" > "$WORK/page2.json"
echo "page 2: $(field .messages.0.body < "$WORK/page2.json"), hasMore $(field .hasMore < "$WORK/page2.json")"
# -> page 1: Second message, hasMore true
# -> page 2: Hello, room!, hasMore false

# 7. Revoke alice's token: later exchanges are 401 (JWTs already issued run until exp).
curl -s -o /dev/null -w 'revoke: %{http_code}\n' -X DELETE "$B/api/v1/tokens/$ALICE_PREFIX" -H "Authorization: Bearer $ADMIN_JWT"
curl -s -o /dev/null -w 'exchange after revocation: %{http_code}\n' -X POST "$B/api/v1/sessions" \
  -H "Authorization: Bearer $ALICE_TOKEN"
# -> revoke: 204
# -> exchange after revocation: 401
