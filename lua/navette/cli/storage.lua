-- `navette storage`: object storage over S3 from the command line (cp, ls,
-- rm, mb, presign, post-policy, sign --explain), with aws-cli's flags. A
-- thin layer over _navette.s3: it parses s3:// URLs, checks keys before any
-- request, finds the credential (a project's, or the conventional AWS_*
-- variables, always as a handle, never as Lua strings) and raises error
-- objects that navette.cli maps to exit codes (2 usage, 3 refused, 4
-- backend).
local errors = require "navette.errors"
local subcommand = require "navette.cli.subcommand"
local term = require "navette.term"
local util = require "navette.util"
local s3, sys, out = _navette.s3, _navette.sys, _navette.out

local EXPIRES_MAX = 604800 -- seven days, S3's limit on a signature
local POST_MAX_BYTES = 5 * 1024 * 1024 * 1024

local COMMON = [[
common options:
  --endpoint URL     the S3 service (default $AWS_ENDPOINT_URL_S3, then
                     $AWS_ENDPOINT_URL, else AWS in the region)
  --region R         default $AWS_REGION, $AWS_DEFAULT_REGION, us-east-1
  --path-style       https://host/bucket/key (default with an endpoint)
  --virtual-host     https://bucket.host/key (default on AWS)
  --ca-bundle PATH   trust these CA certificates
  --credential NAME  a credential declared in the project (navette.lua)
  --profile P        the profile that declares it
  Without --credential: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
  AWS_SESSION_TOKEN.]]

local HELP = {
  cp = [[
usage: navette storage cp SRC DST [options]
  Copies a local file to s3://BUCKET/KEY, an object to a local path (a
  folder, or a path ending in '/', receives the key's last segment), or
  an object to another. The object's sha256 is checked on download, and
  the file appears only when complete. On a terminal a progress bar
  (bytes, rate, time left) shows on stderr; elsewhere one line sums the
  transfer up when it ends.]],
  ls = [[
usage: navette storage ls s3://BUCKET[/PREFIX] [--recursive] [--json]
         [options]
  Lists objects (size, time, key) under PREFIX; without --recursive,
  deeper "folders" show once as PRE NAME/. --json prints an array of
  {key, size, mtime, url}, and {prefix, url} for a folder.]],
  rm = [[
usage: navette storage rm s3://BUCKET/KEY [--recursive] [options]
  Deletes one object (a missing one is an error). With --recursive, KEY
  is a folder: every object under KEY/ goes, in batches of 1000, without
  a question; a prefix is required (a whole bucket is never emptied by
  one command). Each deleted key is printed; a key that could not be
  deleted is named on stderr and the command fails.]],
  mb = [[
usage: navette storage mb s3://BUCKET [options]
  Creates a bucket (one the caller already owns is fine).]],
  presign = [[
usage: navette storage presign s3://BUCKET/KEY --expires SECONDS
         [--method GET|PUT] [--at TIME] [options]
  Prints a URL that lets its holder GET (or PUT) that one object until it
  expires (at most 7 days). --at signs as of TIME (ISO-8601, e.g.
  2025-01-31T12:00:00Z, or seconds since 1970): the same inputs give the
  same URL. Treat the URL as a password until it expires.]],
  ["post-policy"] = [[
usage: navette storage post-policy s3://BUCKET/PREFIX --expires SECONDS
         [--max-bytes N] [--at TIME] [options]
  Prints, as JSON {url, fields}, a browser form upload limited to keys
  under PREFIX and bodies of at most N bytes (default 5 GiB), valid until
  it expires (at most 7 days). Post the fields, then the file last.]],
  sign = [[
usage: navette storage sign --explain s3://BUCKET[/KEY] [--method M]
         [--at TIME] [options]
  Prints the SigV4 canonical request and string to sign of a request
  (method GET, HEAD, PUT or DELETE), to compare with a server's
  SignatureDoesNotMatch details. Never prints the secret.]],
}
local VERBS = { "cp", "ls", "rm", "mb", "presign", "post-policy", "sign" }

-- A native (nil, err) as a raised error object with its code and hint.
local function check(value, err)
  if value ~= nil then return value end
  error(errors.new(err and err.code or "backend",
                   err and err.message or "S3 call failed",
                   err and err.hint), 0)
end

local COMMON_FLAGS = { endpoint = "value", region = "value",
                       ["path-style"] = "bool", ["virtual-host"] = "bool",
                       ["ca-bundle"] = "value", credential = "value",
                       profile = "value" }

local cmd = subcommand.new { name = "storage", verbs = VERBS, help = HELP,
                             common = COMMON, common_flags = COMMON_FLAGS }

-- "s3://BUCKET/KEY" -> bucket, key ("" when none); nil for another string.
local function split_url(s)
  local rest = s:match("^s3://(.*)$")
  if not rest then return nil end
  local bucket, key = rest:match("^([^/]*)/?(.*)$")
  return bucket, key
end

-- need_key: "object" (a key is required), "folder" (a key ending in '/'
-- or none: the caller appends a name, then checks), false (optional).
local function url_arg(verb, s, need_key)
  local bucket, key = split_url(s)
  if not bucket then
    cmd:usage_error("expected s3://BUCKET" .. (need_key and "/KEY" or "")
                    .. ", got '" .. s .. "'", verb)
  end
  check(s3.check_bucket(bucket))
  if need_key and key == "" then
    cmd:usage_error("expected s3://BUCKET/KEY, got '" .. s .. "'", verb)
  end
  -- refused here, before any credential is read or request sent
  if key ~= "" and not (need_key == "folder" and key:sub(-1) == "/") then
    check(s3.check_key(key))
  end
  return bucket, key
end

-- Seconds as a positive whole number bounded by S3's seven days.
local function expires_arg(verb, v)
  if not v then cmd:usage_error("--expires SECONDS is required", verb) end
  local n = util.parse_duration(v)
  n = n and math.tointeger(n)
  if not n or n < 1 then
    cmd:usage_error("--expires must be a positive number of seconds", verb)
  end
  if n > EXPIRES_MAX then
    cmd:usage_error("--expires " .. v .. " exceeds 7 days (" .. EXPIRES_MAX
                    .. " s), S3's limit on a signature", verb)
  end
  return n
end

-- "2025-01-31T12:00:00Z" (fraction, "+HH:MM" offset allowed) or seconds
-- since 1970 -> seconds since 1970.
local function time_arg(verb, v)
  if v == nil then return nil end
  if v:match("^%d+$") then return math.tointeger(tonumber(v)) end
  local t = util.parse_iso8601(v)
  if not t then
    cmd:usage_error("--at expects an ISO-8601 time such as "
                    .. "2025-01-31T12:00:00Z, got '" .. v .. "'", verb)
  end
  t = math.floor(t)
  if t < 0 then cmd:usage_error("--at before 1970", verb) end
  return t
end

-- The project's credential NAME (and the host it is bound to).
local function declared_credential(name, profile_name)
  local project = require "navette.project"
  local creds = require "navette.creds"
  local proj = project.at()
  local profile = project.profile(proj, profile_name)
  local decl = profile.credentials[name]
  if decl and decl.kind ~= "s3" then
    error(errors.new("usage", "credential '" .. name .. "' is of kind "
                     .. tostring(decl.kind) .. ", not s3",
                     "declare one with kind = \"s3\""), 0)
  end
  require("navette.context").enter { profile = profile, project = proj }
  return creds.get(name), decl and decl.host
end

local function env_credential()
  if not sys.getenv("AWS_ACCESS_KEY_ID")
     or not sys.getenv("AWS_SECRET_ACCESS_KEY") then
    error(errors.new("refused", "no S3 credential: AWS_ACCESS_KEY_ID and "
                     .. "AWS_SECRET_ACCESS_KEY are not set",
                     "export them (and AWS_SESSION_TOKEN for temporary "
                     .. "keys), or pass --credential NAME of a credential "
                     .. "declared in navette.lua"), 0)
  end
  -- (the user's own variables, for the endpoint they name: no project's)
  local handle, err = _navette.creds.load { name = "aws", kind = "s3",
                                            source = "env",
                                            origin = "navette" }
  if not handle then
    error(errors.new("refused", err.message, err.hint), 0)
  end
  return handle
end

-- An S3 client from the common options.
local function client(verb, opts)
  if opts["path-style"] and opts["virtual-host"] then
    cmd:usage_error("--path-style and --virtual-host exclude each other", verb)
  end
  local region = opts.region or sys.getenv("AWS_REGION")
                 or sys.getenv("AWS_DEFAULT_REGION") or "us-east-1"
  local endpoint = opts.endpoint or sys.getenv("AWS_ENDPOINT_URL_S3")
                   or sys.getenv("AWS_ENDPOINT_URL")
  local path_style = not opts["virtual-host"]
  if not endpoint then
    endpoint = "https://s3." .. region .. ".amazonaws.com"
    path_style = opts["path-style"] == true
  end
  if opts["ca-bundle"] and not sys.stat(opts["ca-bundle"]) then
    cmd:usage_error("no CA bundle at " .. opts["ca-bundle"], verb)
  end
  local credential, host
  if opts.credential then
    credential, host = declared_credential(opts.credential, opts.profile)
  else
    credential = env_credential()
  end
  return s3.open { endpoint = endpoint, region = region,
                   path_style = path_style, credential = credential,
                   credential_host = host, ca_bundle = opts["ca-bundle"] }
end

local function last_segment(key)
  return key:match("([^/]+)$")
end

local function rate_text(bytes, seconds)
  if seconds <= 0 then return "" end
  return " (" .. util.human_size(math.floor(bytes / seconds)) .. "/s)"
end

-- ---- verbs ---------------------------------------------------------------

local function cmd_cp(argv)
  local opts, args = cmd:parse("cp", argv, {})
  if opts.help then return cmd:print_help("cp") end
  if #args ~= 2 then cmd:usage_error("expected SRC and DST", "cp") end
  local src, dst = args[1], args[2]
  local src_remote, dst_remote = split_url(src) ~= nil,
                                 split_url(dst) ~= nil
  if not src_remote and not dst_remote then
    cmd:usage_error("one of SRC and DST must be an s3:// URL", "cp")
  end
  -- on a terminal: a progress bar on stderr (term.progress, the one
  -- image push-code draws too); on a pipe: a one-line summary at the end
  local bar = term.progress("stderr")
  local tty = bar.tty
  local function show(s) if tty then out.write("stderr", s) end end
  local function progress(label)
    if not tty then return nil end
    return function(done, total)
      if total > 0 then bar:update(label, math.min(done, total), total) end
    end
  end
  local started = sys.now()
  local c, info, what
  if src_remote and dst_remote then
    local sb, sk = url_arg("cp", src, "object")
    local db, dk = url_arg("cp", dst, "folder")
    if dk == "" or dk:sub(-1) == "/" then
      dk = dk .. last_segment(sk)
      check(s3.check_key(dk))
    end
    c = client("cp", opts)
    what = "copy: " .. src .. " -> s3://" .. db .. "/" .. dk
    show(what .. " ...")
    info = check(c:copy(sb, sk, db, dk))
  elseif dst_remote then
    local st = sys.stat(src)
    if not st then cmd:usage_error("no file at " .. src, "cp") end
    if st.type ~= "file" then
      cmd:usage_error(src .. " is not a regular file", "cp")
    end
    local bucket, key = url_arg("cp", dst, "folder")
    if key == "" or key:sub(-1) == "/" then
      key = key .. util.basename(src)
      check(s3.check_key(key))
    end
    c = client("cp", opts)
    what = "upload: " .. src .. " -> s3://" .. bucket .. "/" .. key
    info = check(c:put(bucket, key, src, progress("upload")))
    bar:done()
  else
    local bucket, key = url_arg("cp", src, "object")
    -- the destination file name comes from the checked key's last
    -- segment (never "..", never empty): a folder receives it inside
    local dest = dst
    local st = sys.stat(dst)
    if dst:sub(-1) == "/" or (st and st.type == "directory") then
      if not st then check(sys.mkdir_p(dst)) end
      dest = dst:gsub("/+$", "") .. "/" .. last_segment(key)
    end
    c = client("cp", opts)
    what = "download: " .. src .. " -> " .. dest
    info = check(c:get(bucket, key, dest, progress("download")))
    bar:done()
  end
  c:close()
  local seconds = sys.now() - started
  local resumed = ""
  if info.bytes_resumed then
    resumed = string.format(", resumed: %s were already there",
                            util.human_size(info.bytes_resumed))
  end
  if tty then term.clear_line("stderr") end
  out.write("stderr", string.format("%s: %s in %.1f s%s%s\n", what,
            util.human_size(info.size or 0), seconds,
            rate_text(info.bytes_sent or info.size or 0, seconds), resumed))
  return 0
end

local function cmd_ls(argv)
  local opts, args = cmd:parse("ls", argv, { recursive = "bool",
                                             json = "bool" })
  if opts.help then return cmd:print_help("ls") end
  if #args ~= 1 then cmd:usage_error("expected s3://BUCKET[/PREFIX]", "ls") end
  local bucket, prefix = split_url(args[1])
  if not bucket or bucket == "" then
    cmd:usage_error("expected s3://BUCKET[/PREFIX]", "ls")
  end
  check(s3.check_bucket(bucket))
  -- names show relative to the prefix's "folder"
  local base = prefix:match("^(.*/)") or ""
  local c = client("ls", opts)
  local seen, token = {}, nil
  local json = _navette.json
  local listed = opts.json and json.array() or nil
  repeat
    local page = check(c:list(bucket, prefix ~= "" and prefix or nil,
                              { continuation = token }))
    for _, o in ipairs(page.objects) do
      local rel = o.key:sub(#base + 1)
      local folder = not opts.recursive and rel:match("^([^/]*/)")
      if listed then
        -- --json: every object whole, or a folder once as its prefix
        if folder then
          if not seen[folder] then
            seen[folder] = true
            listed[#listed + 1] = { prefix = base .. folder,
                                    url = "s3://" .. bucket .. "/" .. base
                                          .. folder }
          end
        else
          listed[#listed + 1] = { key = o.key, size = o.size,
                                  mtime = o.mtime and sys.iso8601(o.mtime)
                                          or nil,
                                  url = "s3://" .. bucket .. "/" .. o.key }
        end
      elseif folder then
        if not seen[folder] then
          seen[folder] = true
          term.printf("%30s %s\n", "PRE", folder)
        end
      else
        local when = o.mtime and sys.iso8601(o.mtime):gsub("T", " ")
                                                 :gsub("%.%d+Z$", "Z")
                     or "-"
        term.printf("%-20s %10d %s\n", when, o.size,
                    opts.recursive and o.key or rel)
      end
    end
    token = page.truncated and page.continuation or nil
  until not token
  c:close()
  if listed then term.print(json.encode(listed, true)) end
  return 0
end

-- rm --recursive: every object under a folder prefix, by batches.
local function rm_recursive(opts, url)
  local bucket, prefix = split_url(url)
  if not bucket then cmd:usage_error("expected s3://BUCKET/PREFIX", "rm") end
  check(s3.check_bucket(bucket))
  prefix = prefix:gsub("/+$", "")
  if prefix == "" then
    cmd:usage_error("rm --recursive needs a prefix: s3://" .. bucket
                    .. "/PREFIX (a whole bucket is never emptied at once)",
                    "rm")
  end
  -- a folder: runs/1 removes runs/1/..., never runs/10
  prefix = prefix .. "/"
  check(s3.check_key(prefix .. "x"))
  local c = client("rm", opts)
  local token, deleted, failed = nil, 0, {}
  repeat
    local page = check(c:list(bucket, prefix, { continuation = token }))
    local keys = {}
    for _, o in ipairs(page.objects) do keys[#keys + 1] = o.key end
    if #keys > 0 then
      local result = check(c:delete_batch(bucket, keys))
      for _, k in ipairs(result.deleted) do
        term.print("delete: s3://" .. bucket .. "/" .. k)
      end
      deleted = deleted + #result.deleted
      for _, f in ipairs(result.failed) do
        failed[#failed + 1] = f
        term.eprint(string.format("delete failed: s3://%s/%s: %s%s", bucket,
                                  f.key, f.code, f.message ~= ""
                                  and (": " .. f.message) or ""))
      end
    end
    token = page.truncated and page.continuation or nil
  until not token
  c:close()
  if #failed > 0 then
    error(errors.new("refused", string.format("%d of %d objects under s3://"
                     .. "%s/%s not deleted (first: %s, %s)", #failed,
                     deleted + #failed, bucket, prefix, failed[1].key,
                     failed[1].code), "check the bucket policy and "
                     .. "object locks"), 0)
  end
  term.print(string.format("deleted %d objects under s3://%s/%s", deleted,
                           bucket, prefix))
  return 0
end

local function cmd_rm(argv)
  local opts, args = cmd:parse("rm", argv, { recursive = "bool" })
  if opts.help then return cmd:print_help("rm") end
  if #args ~= 1 then cmd:usage_error("expected s3://BUCKET/KEY", "rm") end
  if opts.recursive then return rm_recursive(opts, args[1]) end
  local bucket, key = url_arg("rm", args[1], "object")
  local c = client("rm", opts)
  check(c:delete(bucket, key))
  c:close()
  term.print("delete: s3://" .. bucket .. "/" .. key)
  return 0
end

local function cmd_mb(argv)
  local opts, args = cmd:parse("mb", argv, {})
  if opts.help then return cmd:print_help("mb") end
  if #args ~= 1 then cmd:usage_error("expected s3://BUCKET", "mb") end
  local bucket, key = url_arg("mb", args[1], false)
  if key ~= "" then
    cmd:usage_error("mb takes s3://BUCKET, without a key", "mb")
  end
  local c = client("mb", opts)
  check(c:create_bucket(bucket))
  c:close()
  term.print("make_bucket: " .. bucket)
  return 0
end

-- presign and post-policy: what the method sign of the profile's client
-- makes of the arguments (a URL, a form) is what the user asked for,
-- written as it is (see s3_lua.c).
local function write_signed(verb, opts, sign, ...)
  local c = client(verb, opts)
  c:write_signed(check(c[sign](c, ...)))
  c:close()
  return 0
end

local function cmd_presign(argv)
  local opts, args = cmd:parse("presign", argv, { method = "value",
                           expires = "value", at = "value" })
  if opts.help then return cmd:print_help("presign") end
  if #args ~= 1 then cmd:usage_error("expected s3://BUCKET/KEY", "presign") end
  local method = (opts.method or "GET"):upper()
  if method ~= "GET" and method ~= "PUT" then
    cmd:usage_error("--method is GET or PUT", "presign")
  end
  local expires = expires_arg("presign", opts.expires)
  local at = time_arg("presign", opts.at)
  local bucket, key = url_arg("presign", args[1], "object")
  return write_signed("presign", opts, "presign", method, bucket, key,
                      expires, at)
end

local function cmd_post_policy(argv)
  local opts, args = cmd:parse("post-policy", argv, { expires = "value",
                           ["max-bytes"] = "value", at = "value" })
  if opts.help then return cmd:print_help("post-policy") end
  if #args ~= 1 then
    cmd:usage_error("expected s3://BUCKET/PREFIX", "post-policy")
  end
  local expires = expires_arg("post-policy", opts.expires)
  local at = time_arg("post-policy", opts.at)
  local max_bytes = POST_MAX_BYTES
  if opts["max-bytes"] then
    max_bytes = util.parse_size(opts["max-bytes"])
    if not max_bytes or max_bytes < 1 or max_bytes > POST_MAX_BYTES then
      cmd:usage_error("--max-bytes is 1 to 5 GiB", "post-policy")
    end
  end
  local bucket, prefix = split_url(args[1])
  if not bucket then
    cmd:usage_error("expected s3://BUCKET/PREFIX", "post-policy")
  end
  check(s3.check_bucket(bucket))
  if prefix == "" then
    cmd:usage_error("a POST policy is scoped to a key prefix: "
                    .. "s3://BUCKET/PREFIX", "post-policy")
  end
  check(s3.check_key(prefix .. "x"))
  return write_signed("post-policy", opts, "post_policy", bucket, prefix,
                      expires, max_bytes, at)
end

local function cmd_sign(argv)
  local opts, args = cmd:parse("sign", argv, { explain = "bool",
                           method = "value", at = "value" })
  if opts.help then return cmd:print_help("sign") end
  if not opts.explain then
    cmd:usage_error("sign only explains: pass --explain", "sign")
  end
  if #args ~= 1 then cmd:usage_error("expected s3://BUCKET[/KEY]", "sign") end
  local method = (opts.method or "GET"):upper()
  local ok = { GET = true, HEAD = true, PUT = true, DELETE = true }
  if not ok[method] then
    cmd:usage_error("--method is GET, HEAD, PUT or DELETE", "sign")
  end
  local at = time_arg("sign", opts.at)
  local bucket, key = url_arg("sign", args[1], false)
  local c = client("sign", opts)
  local canonical, to_sign = c:explain(method, bucket,
                                       key ~= "" and key or nil, at)
  check(canonical, to_sign)
  c:close()
  -- through the output module: a session token in it is masked
  term.print(term.style("stdout", "bold", "canonical request:"))
  term.print(canonical)
  term.print("")
  term.print(term.style("stdout", "bold", "string to sign:"))
  term.print(to_sign)
  return 0
end

cmd.commands = { cp = cmd_cp, ls = cmd_ls, rm = cmd_rm, mb = cmd_mb,
                 presign = cmd_presign, ["post-policy"] = cmd_post_policy,
                 sign = cmd_sign }

local M = {
  name = "storage",
  summary = { { "storage VERB ...",
                "object storage over S3 (cp, ls, rm...)" } },
  usage = [[
usage: navette storage cp|ls|rm|mb|presign|post-policy|sign ... [--endpoint URL]
  Object storage over S3 (see `navette storage help`).]],
  flags = COMMON_FLAGS, -- those every verb takes; each verb adds its own
  -- its verbs load only the credential --credential names, or AWS_*
  read_only = false,
}

-- argv without "storage"; returns the exit status (errors raise).
function M.run(argv) return cmd:main(argv) end

return M
