-- `navette completion bash|zsh|fish`: shell completion scripts made from
-- the command line's own tables, so they cannot drift from it. Commands
-- come from navette.cli.common's list, each one's file, and the
-- backends' commands; a command's flags are its flags table, the one it
-- hands to the flag parser, and each verb's flags the very table its
-- command parses with that verb
-- (navette.args.flags_of); verbs and their one-line descriptions come
-- from the commands' usage text. Where a command takes JOB or RUN, the
-- scripts ask `navette completion jobs` for the words: recent names, ids
-- and run ids of this folder's project, read from the job database alone
-- (no agent is started, no backend asked).
local errors = require "navette.errors"
local term = require "navette.term"
local common = require "navette.cli.common"

local completion = {
  name = "completion",
  summary = { { "completion SHELL",
                "shell completions (bash, zsh, fish)" } },
  usage = [[
usage: navette completion bash|zsh|fish|jobs
  Prints the shell's completion script for navette, made from the
  commands' own flag tables. For example, in ~/.bashrc:
  source <(navette completion bash)
  The scripts complete JOB and RUN with what `navette completion jobs`
  prints: `last`, then the names, ids and run ids of this folder's
  project's recent jobs, one per line.]],
  flags = {},
  read_only = true,
}

local SHELLS = { "bash", "zsh", "fish" }

-- How many recent jobs `completion jobs` offers.
local RECENT = 200

-- The words that name this project's recent jobs, newest first: `last`,
-- each name once, each id, each run id once.
function completion.job_words()
  local jobs = require "navette.jobview"
  local json = _navette.json
  local project = jobs.here()
  local text = jobs.db():list(RECENT)
  local rows = text and json.decode(text) or {}
  local words, seen = { "last" }, { last = true }
  local function add(w)
    if type(w) == "string" and w ~= "" and not seen[w]
       and not w:find("[%s'\"\\]") then
      seen[w] = true
      words[#words + 1] = w
    end
  end
  for _, r in ipairs(rows) do
    if not project or r.project == project then
      add(r.name)
      add(r.id)
      add(r.run)
    end
  end
  return words
end

-- Verbs of a command: the lowercase words after `navette CMD` in its
-- usage lines ("navette storage cp|ls|rm ..." gives cp, ls, rm).
local function verbs_of(help, command)
  local verbs, seen = {}, {}
  for line in help:gmatch("[^\n]+") do
    local word = line:match("navette " .. command:gsub("%-", "%%-")
                            .. " (%S+)")
    if word then
      for v in word:gmatch("[^|]+") do
        if v:match("^[a-z][a-z0-9-]*$") and not seen[v] then
          seen[v] = true
          verbs[#verbs + 1] = v
        end
      end
    end
  end
  return verbs
end

-- The first sentence of a help text after its usage lines, shortened.
local function summary(help)
  local text = {}
  for line in help:gmatch("[^\n]+") do
    if line:match("^%s+%-%-") then break end
    if not line:match("^usage:") and not line:match("^%s+navette ")
       and not line:match("^%s+%[") then
      text[#text + 1] = line:gsub("^%s+", "")
    end
  end
  local s = table.concat(text, " "):gsub("%.%s.*$", ""):gsub("[.:]$", "")
  if #s > 72 then s = s:sub(1, 71):gsub("%s*%S*$", "") .. "…" end
  return s
end

-- Flag descriptions written in a help text ("  --node N   run on ...").
local function flag_docs(help)
  local docs = {}
  for line in help:gmatch("[^\n]+") do
    local name, text = line:match("^%s+%-%-([%w-]+)[^\n]-%s%s+(%S[^\n]*)$")
    if name and not docs[name] then docs[name] = text end
  end
  return docs
end

-- flags {name = "bool"|"value"} as a sorted list of {name, word, value,
-- doc}: word is how it is typed (-l for a one-letter name, else --name).
local function flag_list(flags, docs)
  local list = {}
  for name, kind in pairs(flags or {}) do
    list[#list + 1] = { name = name,
                        value = kind == "value" or kind == "values",
                        doc = docs[name],
                        word = (#name == 1 and "-" or "--") .. name }
  end
  list[#list + 1] = { name = "help", word = "--help", value = false,
                      doc = "show the usage" }
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

-- The model every script is written from: {commands = {{name, doc,
-- flags, verbs = {{name, flags}} | nil, verbs_share_flags}}}.
function completion.model()
  local args = require "navette.args"
  local commands = {}
  for _, name in ipairs(common.names()) do
    local command = common.command(name)
    local help = command.usage
    local docs = flag_docs(help)
    local run = command.run
    local c = { name = name, doc = summary(help),
                jobs = help:match("^usage: navette %S+ [^\n]-[A-Z]*JOB")
                       ~= nil or help:match("^usage: navette %S+ RUN")
                       ~= nil }
    local verbs = verbs_of(help, name)
    if #verbs == 0 then
      c.flags = flag_list(command.flags, docs)
    else
      -- each verb's flags: those its command parses with the verb given
      -- (storage, image: the verb's own; creds, audit: the command's)
      c.flags, c.verbs = flag_list({}, docs), {}
      for i, v in ipairs(verbs) do
        local flags = run and args.flags_of(function() run({ v }) end)
        c.verbs[i] = { name = v, flags = flag_list(flags, docs) }
      end
    end
    commands[#commands + 1] = c
  end
  -- help COMMAND|TOPIC: the commands and the manual's topics are its verbs
  local names = {}
  for i, c in ipairs(commands) do names[i] = { name = c.name, flags = {} } end
  local topics = require("navette.cli.help").topics()
  topics[#topics + 1] = "topics"
  for _, topic in ipairs(topics) do
    names[#names + 1] = { name = topic, flags = {} }
  end
  commands[#commands + 1] = { name = "help",
                              doc = "show a command's usage or a topic",
                              flags = {}, verbs = names }
  return { commands = commands }
end

local function words(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = x.word or x.name end
  return table.concat(out, " ")
end

-- Every flag that takes a value, as a shell case pattern.
local function value_flags(model)
  local seen, list = {}, {}
  local function add(flags)
    for _, f in ipairs(flags) do
      if f.value and not seen[f.name] then
        seen[f.name] = true
        list[#list + 1] = f.word
      end
    end
  end
  for _, c in ipairs(model.commands) do
    add(c.flags)
    for _, v in ipairs(c.verbs or {}) do add(v.flags) end
  end
  table.sort(list)
  return #list > 0 and table.concat(list, "|") or "--"
end

-- Single quotes for sh-like shells.
local function quote(s)
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

-- The case over the commands (and their verbs) that sets flags and
-- verbs; value(list, key) writes a list as the shell's assignment value.
local function command_cases(w, model, value)
  w("\tcase $cmd in")
  for _, c in ipairs(model.commands) do
    w("\t" .. c.name .. ")")
    w("\t\tflags=" .. value(c.flags, "word"))
    if c.jobs then w("\t\tjobs=1") end
    if c.verbs then
      w("\t\tverbs=" .. value(c.verbs))
      w("\t\tcase $verb in")
      for _, v in ipairs(c.verbs) do
        if #v.flags > 1 then
          w("\t\t" .. v.name .. ") flags=" .. value(v.flags, "word")
            .. " ;;")
        end
      end
      w("\t\tesac")
    end
    w("\t\t;;")
  end
  w("\tesac")
end

local function bash(model)
  local out = {}
  local function w(s) out[#out + 1] = s end
  local values = value_flags(model)
  w("# bash completion for navette: generated by `navette completion bash`.")
  w("_navette() {")
  w("\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}")
  w("\tlocal cmd= verb= i skip=0 flags= verbs= jobs=")
  w("\tCOMPREPLY=()")
  w("\tfor ((i = 1; i < COMP_CWORD; i++)); do")
  w("\t\tif [ \"$skip\" = 1 ]; then skip=0; continue; fi")
  w("\t\tcase ${COMP_WORDS[i]} in")
  w("\t\t" .. values .. ") skip=1 ;;")
  w("\t\t-*) ;;")
  w("\t\t*) if [ -z \"$cmd\" ]; then cmd=${COMP_WORDS[i]}")
  w("\t\t   elif [ -z \"$verb\" ]; then verb=${COMP_WORDS[i]}; fi ;;")
  w("\t\tesac")
  w("\tdone")
  w("\tif [ -z \"$cmd\" ]; then")
  w("\t\tCOMPREPLY=($(compgen -W " .. quote(words(model.commands))
    .. " -- \"$cur\"))")
  w("\t\treturn 0")
  w("\tfi")
  -- a value flag's value: left to the default (file names)
  w("\tcase $prev in " .. values .. ") return 0 ;; esac")
  command_cases(w, model, function(list) return quote(words(list)) end)
  w("\tif [[ $cur == -* ]]; then")
  w("\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))")
  w("\telif [ -n \"$verbs\" ] && [ -z \"$verb\" ]; then")
  w("\t\tCOMPREPLY=($(compgen -W \"$verbs\" -- \"$cur\"))")
  w("\telif [ -n \"$jobs\" ]; then")
  w("\t\tlocal IFS=$'\\n'")
  w("\t\tCOMPREPLY=($(compgen -W \"$(navette completion jobs "
    .. "2>/dev/null)\" -- \"$cur\"))")
  w("\tfi")
  w("\treturn 0")
  w("}")
  w("complete -o bashdefault -o default -F _navette navette")
  return table.concat(out, "\n") .. "\n"
end

-- zsh: names with descriptions as "name:description" for _describe; key
-- is the field holding the name ("name" of a command, "word" of a flag).
local function described(list, key)
  local out = {}
  for i, x in ipairs(list) do
    local doc = (x.doc or ""):gsub(":", "\\:")
    out[i] = quote(x[key or "name"] .. (doc ~= "" and (":" .. doc) or ""))
  end
  return table.concat(out, " ")
end

local function zsh(model)
  local out = {}
  local function w(s) out[#out + 1] = s end
  local values = value_flags(model)
  w("#compdef navette")
  w("# zsh completion for navette: generated by `navette completion zsh`.")
  w("_navette() {")
  w("\tlocal cmd= verb= i skip=0 w jobs=")
  w("\tlocal -a flags verbs commands")
  w("\tfor ((i = 2; i < CURRENT; i++)); do")
  w("\t\tw=${words[i]}")
  w("\t\tif ((skip)); then skip=0; continue; fi")
  w("\t\tcase $w in")
  w("\t\t" .. values .. ") skip=1 ;;")
  w("\t\t-*) ;;")
  w("\t\t*) if [[ -z $cmd ]]; then cmd=$w")
  w("\t\t   elif [[ -z $verb ]]; then verb=$w; fi ;;")
  w("\t\tesac")
  w("\tdone")
  w("\tif [[ -z $cmd ]]; then")
  w("\t\tcommands=(" .. described(model.commands) .. ")")
  w("\t\t_describe -t commands 'navette command' commands")
  w("\t\treturn")
  w("\tfi")
  w("\tcase ${words[CURRENT-1]} in " .. values .. ") _files; return ;; esac")
  command_cases(w, model, function(list, key)
    return "(" .. described(list, key) .. ")"
  end)
  w("\tif [[ ${words[CURRENT]} == -* ]]; then")
  w("\t\t_describe -t options 'option' flags")
  w("\telif ((${#verbs})) && [[ -z $verb ]]; then")
  w("\t\t_describe -t verbs 'verb' verbs")
  w("\telif [[ -n $jobs ]]; then")
  w("\t\tcompadd -Q -- ${(f)\"$(navette completion jobs 2>/dev/null)\"}")
  w("\telse")
  w("\t\t_files")
  w("\tfi")
  w("}")
  w("if [[ ${funcstack[1]} == _navette ]]; then")
  w("\t_navette \"$@\"")
  w("else")
  w("\tcompdef _navette navette")
  w("fi")
  return table.concat(out, "\n") .. "\n"
end

local function fish_flags(cond, flags)
  local out = {}
  for _, f in ipairs(flags) do
    out[#out + 1] = "complete -c navette -n " .. quote(cond)
                    .. (#f.name == 1 and " -s " or " -l ") .. f.name
                    .. (f.value and " -r" or "")
                    .. (f.doc and (" -d " .. quote(f.doc)) or "")
  end
  return out
end

local function fish(model)
  local out = { "# fish completion for navette: generated by "
                .. "`navette completion fish`." }
  local function add(lines)
    for _, l in ipairs(lines) do out[#out + 1] = l end
  end
  local names = words(model.commands)
  for _, c in ipairs(model.commands) do
    out[#out + 1] = "complete -c navette -f -n "
                    .. quote("not __fish_seen_subcommand_from " .. names)
                    .. " -a " .. c.name .. " -d " .. quote(c.doc)
  end
  for _, c in ipairs(model.commands) do
    local seen = "__fish_seen_subcommand_from " .. c.name
    if c.verbs then
      local verbs = words(c.verbs)
      for _, v in ipairs(c.verbs) do
        out[#out + 1] = "complete -c navette -f -n "
                        .. quote(seen .. "; and not "
                                 .. "__fish_seen_subcommand_from " .. verbs)
                        .. " -a " .. v.name
      end
      for _, v in ipairs(c.verbs) do
        if #v.flags > 1 then
          add(fish_flags(seen .. "; and __fish_seen_subcommand_from "
                         .. v.name, v.flags))
        end
      end
    end
    add(fish_flags(seen, c.flags))
    if c.jobs then
      out[#out + 1] = "complete -c navette -f -n " .. quote(seen)
                      .. " -a '(navette completion jobs 2>/dev/null)'"
    end
  end
  return table.concat(out, "\n") .. "\n"
end

local WRITERS = { bash = bash, zsh = zsh, fish = fish }

function completion.script(shell)
  return WRITERS[shell](completion.model())
end

function completion.run(argv)
  local opts, rest = common.parse(completion.name, argv, completion.flags)
  if opts.help then term.print(completion.usage); return 0 end
  if #rest == 1 and rest[1] == "jobs" then
    for _, w in ipairs(completion.job_words()) do term.print(w) end
    return 0
  end
  if #rest ~= 1 or not WRITERS[rest[1]] then
    error(errors.new("usage", (#rest == 1 and ("no completion for shell '"
                     .. rest[1] .. "'") or "expected one SHELL")
                     .. ": " .. table.concat(SHELLS, ", "),
                     "see `navette completion --help`"), 0)
  end
  term.write(completion.script(rest[1]))
  return 0
end

return completion
