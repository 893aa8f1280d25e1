-- Vision: five images python3-skimage ships, sharded over two jobs that
-- find faces with OpenCV's Haar cascade (opencv-data's) and compute simple
-- features, then a merge into report.json and contact-sheet.html.
--
--   navette run recipes/vision/faces.lua --wait
local vision = require "lib"

vision.pipeline { shards = 2, code = "HEAD" }
