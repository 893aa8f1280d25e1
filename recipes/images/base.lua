-- The catalogue's base image: Debian bookworm with every family's
-- packages (lib.lua: images.PACKAGES), built by debootstrap and buildah on
-- this machine (Linux, as root) only when the registry lacks the tag of
-- this package list, pushed where the profile's images.catalogue says,
-- then checked by a job that runs in it on the profile's backend.
--
--   navette run recipes/images/base.lua --wait
local images = require "lib"

local img = images.base {}
images.check { image = img, code = "HEAD" }
