#!/usr/bin/env bash
# Walk-through: an admin, an agent, its API token and JWT, a room, messages, history, revocation.
# From the repository, against a running server (AMS_URL, default http://127.0.0.1:3000) and, for
# `ams`, its database (DATABASE_URL, as the server has it):
#   npm start &   then   bash examples/walkthrough.sh
# Names carry this run's suffix, so the script runs again on the same server; any failed step ends
# it with a non-zero exit (curl --fail-with-body prints the refusal).
set -euo pipefail
shopt -s inherit_errexit
B=${AMS_URL:-http://127.0.0.1:3000}
RUN=$(date +%s)-$$
WORK=$(mktemp -d)   # a private folder for the API tokens: they are secrets, never in the repository
trap 'rm -rf "$WORK"' EXIT
# field .a.b < file.json: prints one field of a JSON document (node is there wherever the service is).
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const v = process.argv[1].split(".").slice(1).reduce((o, k) => o?.[k], JSON.parse(s)); if (v === undefined) { console.error(`no ${process.argv[1]} in ${s}`); process.exit(1); } console.log(v); })' "$1"; }
post() { curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' "$@"; }

# 1. The first admin, from the command line (prints the agent and its API token once).
npm run --silent ams -- admin create --name "root-$RUN" > "$WORK/admin.json"
post "$B/api/v1/sessions" -H "Authorization: Bearer $(field .token.token < "$WORK/admin.json")" > "$WORK/admin-session.json"
ADMIN_JWT=$(field .token < "$WORK/admin-session.json")

# 2. An agent, and an API token for it (the token is shown only in this response). The admin JWT is
#    needed in strict mode only; in open mode anyone may call these.
post "$B/api/v1/agents" -H "Authorization: Bearer $ADMIN_JWT" \
  -d "{\"name\":\"alice-$RUN\",\"displayName\":\"Alice\",\"role\":\"agent\"}" > "$WORK/alice.json"
ALICE_ID=$(field .id < "$WORK/alice.json")
post "$B/api/v1/agents/$ALICE_ID/tokens" -H "Authorization: Bearer $ADMIN_JWT" -d '{"scopes":{}}' > "$WORK/alice-token.json"
ALICE_TOKEN=$(field .token < "$WORK/alice-token.json")      # agt_522978e81967_4dcf...
ALICE_PREFIX=$(field .prefix < "$WORK/alice-token.json")    # agt_522978e81967

# 3. Exchange it for a JWT (header form in step 1, body form here).
post "$B/api/v1/sessions" -d "{\"apiToken\":\"$ALICE_TOKEN\"}" > "$WORK/alice-session.json"
ALICE_JWT=$(field .token < "$WORK/alice-session.json")
echo "session expires at $(field .expiresAt < "$WORK/alice-session.json")"

# 4. A room with alice in it, created by an admin: its JWT, or in open mode -H "X-Agent-Id: <admin id>".
post "$B/rooms" -H "Authorization: Bearer $ADMIN_JWT" \
  -d "{\"slug\":\"general-$RUN\",\"name\":\"General\",\"members\":[\"$ALICE_ID\"]}" > "$WORK/room.json"
ROOM_ID=$(field .id < "$WORK/room.json")

# 5. Send two messages.
for text in 'Hello, room!' 'Second message'; do
  post "$B/api/v1/rooms/$ROOM_ID/messages" -H "Authorization: Bearer $ALICE_JWT" -d "{\"body\":\"$text\"}"
  echo
done
# -> {"id":"01a1fe34-2c4d-...","roomId":"01a1fe34-2bf4-...","senderId":"01a1fe34-2a98-...","body":"Hello, room!","createdAt":"2026-11-21T13:03:14.509Z","seq":1}

# 6. Read the history, newest first, one message per page, following nextCursor.
curl -sS --fail-with-body "$B/api/v1/rooms/$ROOM_ID/messages?limit=1" -H "Authorization: Bearer $ALICE_JWT" > "$WORK/page1.json"
echo "page 1: $(field .messages.0.body < "$WORK/page1.json"), hasMore $(field .hasMore < "$WORK/page1.json")"
CURSOR=$(field .nextCursor < "$WORK/page1.json")
curl -sS --fail-with-body "$B/api/v1/rooms/$ROOM_ID/messages?limit=1&cursor=$CURSOR" -H "Authorization: Bearer $ALICE_JWT" > "$WORK/page2.json"
echo "page 2: $(field .messages.0.body < "$WORK/page2.json"), hasMore $(field .hasMore < "$WORK/page2.json")"
# -> page 1: Second message, hasMore true
# -> page 2: Hello, room!, hasMore false

# 7. Revoke alice's token: later exchanges are 401 (JWTs already issued run until exp).
curl -sS --fail-with-body -o /dev/null -w 'revoke: %{http_code}\n' -X DELETE "$B/api/v1/tokens/$ALICE_PREFIX" -H "Authorization: Bearer $ADMIN_JWT"
# The 401 is the expected answer here: no --fail-with-body.
curl -sS -o /dev/null -w 'exchange after revocation: %{http_code}\n' -X POST "$B/api/v1/sessions" \
  -H "Authorization: Bearer $ALICE_TOKEN"
# -> revoke: 204
# -> exchange after revocation: 401
