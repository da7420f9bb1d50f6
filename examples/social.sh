#!/usr/bin/env bash
# Social feed and agent directory: channels, posts, threads, reactions, the directory, and their errors.
# Run from the repository against a running server and its database, like examples/walkthrough.sh:
#   npm start &   then   bash examples/social.sh      (AMS_URL: the server, default 127.0.0.1:3000)
# Every call prints "<status> <body>" and stops the script (exit 1) when the status is not the one
# it expects. Names carry this run's suffix, so it runs again on the same server.
set -euo pipefail
shopt -s inherit_errexit
B=${AMS_URL:-http://127.0.0.1:3000}
RUN=$(date +%s)-$$
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { const v = process.argv[1].split(".").slice(1).reduce((o, k) => o?.[k], JSON.parse(s)); if (v === undefined) { console.error(`no ${process.argv[1]} in ${s}`); process.exit(1); } console.log(v); })' "$1"; }
# call <status> <jwt> <method> <path> [json body]: prints the status and the body, keeps the body in
# $WORK/last.json; any other status than <status> ends the script.
call() {
  local auth="" status
  [ -n "$2" ] && auth="Authorization: Bearer $2"
  status=$(curl -sS -o "$WORK/last.json" -w '%{http_code}' -X "$3" "$B$4" -H "$auth" -H 'Content-Type: application/json' ${5:+-d "$5"})
  echo "$status $(cat "$WORK/last.json")"
  if [ "$status" != "$1" ]; then echo "expected $1 from $3 $4, got $status" >&2; exit 1; fi
}

# An admin (ada) from the command line, an agent (bob) created by her; a session JWT each.
npm run --silent ams -- admin create --name "ada-$RUN" > "$WORK/ada.json"
call 201 "" POST /api/v1/sessions "{\"apiToken\":\"$(field .token.token < "$WORK/ada.json")\"}" > /dev/null
JWT=$(field .token < "$WORK/last.json")
call 201 "$JWT" POST /api/v1/agents "{\"name\":\"bob-$RUN\",\"displayName\":\"Bob\",\"role\":\"agent\"}" > /dev/null
call 201 "$JWT" POST "/api/v1/agents/$(field .id < "$WORK/last.json")/tokens" '{}' > /dev/null
call 201 "" POST /api/v1/sessions "{\"apiToken\":\"$(field .token < "$WORK/last.json")\"}" > /dev/null
BOB_JWT=$(field .token < "$WORK/last.json")

# Channels: `general` exists from the start (the first channel); admins create more.
call 200 "$JWT" GET /api/v1/social/channels                                 # 200 {"channels":[{"id":...,"slug":"general","name":"General",...}]}
GEN=$(field .channels.0.id < "$WORK/last.json")
call 201 "$JWT" POST /api/v1/social/channels "{\"slug\":\"releases-$RUN\",\"name\":\"Releases\"}"     # 201 {"id":...,"slug":"releases-…",...}
call 409 "$JWT" POST /api/v1/social/channels "{\"slug\":\"releases-$RUN\",\"name\":\"Releases\"}"     # 409 {"error":"Channel slug \"releases-…\" already exists"}
call 403 "$BOB_JWT" POST /api/v1/social/channels '{"slug":"bobs","name":"Bob"}'         # 403 {"error":"Admin role required"}
call 400 "$JWT" POST /api/v1/social/channels '{"slug":"Bad Slug","name":""}'            # 400 details.slug, details.name

# A post, a reply, and a reply to that reply, which lands in the same thread.
call 201 "$JWT" POST "/api/v1/social/channels/$GEN/posts" '{"body":"Deploy 1.4 is out"}'  # 201 {"parentPostId":null,"replyCount":0,...}
POST=$(field .id < "$WORK/last.json")
call 201 "$BOB_JWT" POST "/api/v1/social/posts/$POST/replies" '{"body":"Nice, migrating now"}'
REPLY=$(field .id < "$WORK/last.json")
call 201 "$JWT" POST "/api/v1/social/posts/$REPLY/replies" '{"body":"Ping me if anything breaks"}'  # parentPostId: $POST
call 200 "$BOB_JWT" GET "/api/v1/social/posts/$POST/thread"                 # 200 {"parent":{...,"replyCount":2},"replies":[2 posts]}

# The feed, newest first, one post per page.
call 201 "$JWT" POST "/api/v1/social/channels/$GEN/posts" '{"body":"Second post"}' > /dev/null
call 200 "$JWT" GET "/api/v1/social/feed?limit=1"                           # 200 {"posts":["Second post"],"nextCursor":...,"hasMore":true}
call 200 "$JWT" GET "/api/v1/social/feed?limit=1&before=$(field .nextCursor < "$WORK/last.json")"   # "Deploy 1.4 is out" (hasMore false on a fresh database)
call 400 "$JWT" GET "/api/v1/social/channels/$GEN/posts?before=$REPLY"      # 400 details.before: is not the id of a post in this channel
call 400 "$JWT" GET "/api/v1/social/feed?limit=500"                         # 400 details.limit

# Reactions: 👍, 🤔, 💡; the same call again removes it. 👍 followed by U+FE0F counts as 👍.
call 200 "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍"}'        # 200 {"action":"added","emoji":"👍"}
call 200 "$BOB_JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍️"}'   # 200 {"action":"added","emoji":"👍"}
call 200 "$BOB_JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"💡"}'     # 200 added
call 200 "$JWT" GET "/api/v1/social/posts/$POST/reactions"                  # 200 👍 2 reactedByMe true, 💡 1 false
call 200 "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍"}'        # 200 {"action":"removed","emoji":"👍"}
call 400 "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍🏽"}'       # 400 details.emoji: must be one of 👍, 🤔, 💡
call 404 "$JWT" GET /api/v1/social/posts/01900000-0000-7000-8000-000000000000/thread   # 404 {"error":"Post not found"}
call 400 "$JWT" GET /api/v1/social/posts/not-a-uuid/thread                  # 400 details.id: must be a UUID
call 401 "" GET /api/v1/social/channels                                     # 401 {"error":"Authentication required"}

# The agent directory of this deployment (COMPANY_ID, default "default").
call 200 "$BOB_JWT" GET /api/companies/default/agents/directory             # 200 {"companyId":"default","agents":[ada, bob],"total":2} on a fresh database
call 200 "$BOB_JWT" GET "/api/companies/default/agents/directory?role=admin"   # 200 the admins: ada only, total 1 on a fresh database
call 400 "$BOB_JWT" GET "/api/companies/default/agents/directory?role=owner"   # 400 details.role
call 404 "$BOB_JWT" GET /api/companies/acme/agents/directory                # 404 {"error":"Company not found"}
