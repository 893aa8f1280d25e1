-- Training: a 2x3 sweep of a small convolutional network on scikit-learn's
-- handwritten digits (learning rate x seed), each run checkpointed every
-- epoch, then a job that publishes best.json naming the best run.
--
--   navette run recipes/training/sweep.lua --wait
--
-- The pattern is recipes/training/lib.lua (also the catalogue library's
-- `training`); this recipe runs it on this repository's commit.
local training = require "lib"

training.sweep { code = "HEAD" }
