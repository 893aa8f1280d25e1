-- The catalogue's base image: Debian bookworm with the packages the four
-- families' jobs run, built by debootstrap and buildah (no daemon) with
-- navette.image.debootstrap, and pushed to the repository the profile
-- names for the catalogue:
--
--   profiles = { cluster = { ..., images = {
--     catalogue = "registry.example.com/team/catalogue:bookworm" } } }
--
-- The image's own tag is "bookworm-" and the hash of its package list, so
-- a registry that has it has that list: only a changed list builds again.
-- The profile's tag ("bookworm") is a pointer moved to the image built;
-- the catalogue's jobs run in what it points to when submitted (pinned by
-- digest in their run records), and on the node's own environment when
-- the profile names no catalogue image.
--
-- recipes/images/base.lua builds the whole list; another repository
-- brings it as a library:
--   local lib = navette.use { git = URL, ref = TAG, module = "recipes.catalogue" }
--   local img = lib.images.base { families = { "video" } }
--   lib.images.check { image = img, families = { "video" } }
local navette = require "navette"

local images = {}

images.SUITE = "bookworm"
-- What each family's jobs call (Debian 12 packages).
images.PACKAGES = {
  training = { "python3", "python3-torch", "python3-sklearn" },
  audio = { "python3", "espeak-ng", "ffmpeg", "sox" },
  video = { "python3", "ffmpeg" },
  vision = { "python3", "python3-numpy", "python3-opencv", "opencv-data",
             "python3-skimage" },
}
images.FAMILIES = { "training", "audio", "video", "vision" }

-- The packages of families (default: all four), sorted, each once.
function images.packages(families)
  local seen, out = {}, {}
  for _, f in ipairs(families or images.FAMILIES) do
    local list = images.PACKAGES[f]
    if not list then
      error("images: unknown family '" .. tostring(f) .. "' (training, "
            .. "audio, video or vision)", 3)
    end
    for _, p in ipairs(list) do
      if not seen[p] then seen[p], out[#out + 1] = true, p end
    end
  end
  table.sort(out)
  return out
end

-- Where the image goes: opts.to, else the profile's images.catalogue.
local function target(opts)
  local to = opts.to or navette.context().images.catalogue
  if not to then
    error("images.base: the profile names no catalogue image; add "
          .. "images = { catalogue = \"REGISTRY/REPOSITORY:bookworm\" } "
          .. "to it in navette.lua (or give `to`)", 3)
  end
  return to
end

-- opts (all optional):
--   families   the families whose packages go in (default: all four)
--   packages   the list itself, instead of families'
--   to         the repository (and pointer tag), instead of the profile's
--   mirror     the Debian mirror (default: this machine's apt source)
--   rebuild    build even when the registry has the list's tag
-- -> what navette.image.debootstrap gives (reference, digest, tag, built)
function images.base(opts)
  opts = opts or {}
  return navette.image.debootstrap {
    to = target(opts),
    suite = images.SUITE,
    packages = opts.packages or images.packages(opts.families),
    mirror = opts.mirror,
    rebuild = opts.rebuild,
  }
end

-- A job in the image that checks it: every package installed (dpkg),
-- the Debian release, the families' tools answering. Its outputs:
-- packages.tsv (name, version), os-release, tools.txt.
--   image      what images.base gave, or a reference
--   families, packages   what must be installed (as in images.base)
--   code       "library" (default) or a revision of the recipe's repository
function images.check(opts)
  opts = opts or {}
  local packages = opts.packages or images.packages(opts.families)
  return navette.job {
    name = opts.name or "image-check",
    code = opts.code or "library",
    image = opts.image,
    command = { "sh", "recipes/images/check.sh" },
    env = { IMAGE_PACKAGES = table.concat(packages, " ") },
    resources = { cpus = 1, memory = "256MiB", time_limit = "5m" },
    success = { exit_code = 0,
                outputs = { "packages.tsv", "os-release", "tools.txt" } },
    failure = {
      log_patterns = { "image-check: FAILED" },
      hint = "the image lacks a package its jobs need (the log names "
          .. "it): build it again with that package (images.base) and "
          .. "point the profile's images.catalogue at it",
    },
  }
end

return images
