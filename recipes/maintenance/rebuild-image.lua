-- Rebuilds a team's image when its dependencies change: the lock files at
-- the root of the commit (requirements*.txt, poetry.lock, uv.lock,
-- Pipfile.lock, package-lock.json, Cargo.lock, go.sum...: their sha256
-- together, navette's lock-file hash) are compared with the hash the
-- image the profile points to carries in its io.navette.lockfile.sha256
-- label, read from the registry. Only when they differ is the commit's
-- Containerfile built (navette.image.build: the tree of the commit, never
-- the working folder, scanned for secrets), pushed under its own tag
-- (commit and hash), and the pointer moved to it; the profile's jobs then
-- run the new digest. Otherwise the task says "up to date".
--
-- The profile names the pointer under `images` (the name IMAGE below):
--   images = { app = "registry.example.com/team/app:current" }
--
--   navette maintain --once recipes/maintenance/rebuild-image.lua
--
-- Safe to stop at any step: a build that did not finish moved nothing; a
-- build pushed but whose pointer did not move is found again (its lock
-- hash differs from the pointer's) and built again, which gives the same
-- tag; the pointer moves last.
local navette = require "navette"

local IMAGE = "app"                 -- the profile's images.<IMAGE>
local FILE = "Containerfile"        -- in the commit

navette.task {
  name = "rebuild-image",
  schedule = "daily 03:00",
  run = function()
    local pointer = navette.context().images[IMAGE]
    if not pointer then
      return false, "profile " .. navette.context().profile .. " names no "
        .. "images." .. IMAGE .. ": add images = { " .. IMAGE
        .. " = \"registry/team/" .. IMAGE .. ":current\" } to it"
    end
    local r = navette.image.rebuild { to = pointer, file = FILE }
    if r.planned then
      return "would build " .. r.tagged .. " (lock files "
        .. r.lockfile_hash:sub(1, 12) .. ")"
    end
    if r.up_to_date then
      return "up to date: " .. pointer .. " is " .. r.reference
        .. " (lock files " .. r.lockfile_hash:sub(1, 12) .. ")"
    end
    return "rebuilt: " .. pointer .. " now " .. r.reference .. " (lock files "
      .. r.lockfile_hash:sub(1, 12) .. ", was "
      .. (r.previous and r.previous.lockfile_hash
          and r.previous.lockfile_hash:sub(1, 12) or "none") .. ")"
  end,
}
