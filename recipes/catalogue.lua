-- The recipe catalogue as a library: another repository brings it with
--   local lib = navette.use { git = URL, ref = TAG, module = "recipes.catalogue" }
-- and calls lib.training.sweep{...} with its own parameters. Each job the
-- library declares runs the library's commit (code = "library"), where
-- its scripts are; its data comes from the recipe's project, and its
-- image from the profile (images.catalogue; lib.images builds it).
return {
  training = require "recipes.training.lib",
  audio = require "recipes.audio.lib",
  video = require "recipes.video.lib",
  vision = require "recipes.vision.lib",
  images = require "recipes.images.lib",
}
