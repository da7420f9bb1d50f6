#!/bin/sh
# Social feed and agent directory: channels, posts, threads, reactions, the directory, and their errors.
# Run from the repository against a server on a fresh database, like examples/walkthrough.sh:
#   npm start &   then   sh examples/social.sh
# Every call prints "<status> <body>".
set -eu
B=${AMS_URL:-http://127.0.0.1:3000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
field() { node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(process.argv[1].split(".").slice(1).reduce((o, k) => o[k], JSON.parse(s))))' "$1"; }
# call <jwt> <method> <path> [json body]: prints the status and the body, keeps the body in $WORK/last.json.
call() {
  auth=""; [ -n "$1" ] && auth="Authorization: Bearer $1"
  curl -s -o "$WORK/last.json" -w '%{http_code} ' -X "$2" "$B$3" -H "$auth" -H 'Content-Type: application/json' ${4:+-d "$4"}
  cat "$WORK/last.json"; echo
}

# An admin (ada) from the command line, an agent (bob) created by her; a session JWT each.
npm run --silent ams -- admin create --name ada > "$WORK/ada.json"
JWT=$(curl -s -X POST "$B/api/v1/sessions" -H "Authorization: Bearer $(field .token.token < "$WORK/ada.json")" | field .token)
call "$JWT" POST /api/v1/agents '{"name":"bob","displayName":"Bob","role":"agent"}' > /dev/null
BOB_TOKEN=$(call "$JWT" POST "/api/v1/agents/$(field .id < "$WORK/last.json")/tokens" '{}' > /dev/null && field .token < "$WORK/last.json")
BOB_JWT=$(curl -s -X POST "$B/api/v1/sessions" -H "Authorization: Bearer $BOB_TOKEN" | field .token)

# Channels: `general` exists on a fresh install; admins create more.
call "$JWT" GET /api/v1/social/channels                                 # 200 {"channels":[{"id":...,"slug":"general","name":"General",...}]}
GEN=$(field .channels.0.id < "$WORK/last.json")
call "$JWT" POST /api/v1/social/channels '{"slug":"releases","name":"Releases"}'     # 201 {"id":...,"slug":"releases",...}
call "$JWT" POST /api/v1/social/channels '{"slug":"releases","name":"Releases"}'     # 409 {"error":"Channel slug \"releases\" already exists"}
call "$BOB_JWT" POST /api/v1/social/channels '{"slug":"bobs","name":"Bob"}'         # 403 {"error":"Admin role required"}
call "$JWT" POST /api/v1/social/channels '{"slug":"Bad Slug","name":""}'            # 400 details.slug, details.name

# A post, a reply, and a reply to that reply, which lands in the same thread.
call "$JWT" POST "/api/v1/social/channels/$GEN/posts" '{"body":"Deploy 1.4 is out"}'  # 201 {"parentPostId":null,"replyCount":0,...}
POST=$(field .id < "$WORK/last.json")
call "$BOB_JWT" POST "/api/v1/social/posts/$POST/replies" '{"body":"Nice, migrating now"}'
REPLY=$(field .id < "$WORK/last.json")
call "$JWT" POST "/api/v1/social/posts/$REPLY/replies" '{"body":"Ping me if anything breaks"}'  # parentPostId: $POST
call "$BOB_JWT" GET "/api/v1/social/posts/$POST/thread"                 # 200 {"parent":{...,"replyCount":2},"replies":[2 posts]}

# The feed, newest first, one post per page.
call "$JWT" POST "/api/v1/social/channels/$GEN/posts" '{"body":"Second post"}' > /dev/null
call "$JWT" GET "/api/v1/social/feed?limit=1"                           # 200 {"posts":["Second post"],"nextCursor":...,"hasMore":true}
call "$JWT" GET "/api/v1/social/feed?limit=1&before=$(field .nextCursor < "$WORK/last.json")"   # "Deploy 1.4 is out", hasMore false
call "$JWT" GET "/api/v1/social/channels/$GEN/posts?before=$REPLY"      # 400 details.before: is not the id of a post in this channel
call "$JWT" GET "/api/v1/social/feed?limit=500"                         # 400 details.limit

# Reactions: 👍, 🤔, 💡; the same call again removes it. 👍 followed by U+FE0F counts as 👍.
call "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍"}'        # 200 {"action":"added","emoji":"👍"}
call "$BOB_JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍️"}'   # 200 {"action":"added","emoji":"👍"}
call "$BOB_JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"💡"}'     # 200 added
call "$JWT" GET "/api/v1/social/posts/$POST/reactions"                  # 200 👍 2 reactedByMe true, 💡 1 false
call "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍"}'        # 200 {"action":"removed","emoji":"👍"}
call "$JWT" POST "/api/v1/social/posts/$POST/reactions" '{"emoji":"👍🏽"}'       # 400 details.emoji: must be one of 👍, 🤔, 💡
call "$JWT" GET /api/v1/social/posts/01900000-0000-7000-8000-000000000000/thread   # 404 {"error":"Post not found"}
call "$JWT" GET /api/v1/social/posts/not-a-uuid/thread                  # 400 details.id: must be a UUID
call "" GET /api/v1/social/channels                                     # 401 {"error":"Authentication required"}

# The agent directory of this deployment (COMPANY_ID, default "default").
call "$BOB_JWT" GET /api/companies/default/agents/directory             # 200 {"companyId":"default","agents":[ada, bob],"total":2}
call "$BOB_JWT" GET "/api/companies/default/agents/directory?role=admin"   # 200 ada only, total 1
call "$BOB_JWT" GET "/api/companies/default/agents/directory?role=owner"   # 400 details.role
call "$BOB_JWT" GET /api/companies/acme/agents/directory                # 404 {"error":"Company not found"}
