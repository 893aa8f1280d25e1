-- Video: a 12-second demo source (ffmpeg's testsrc2 and sine) cut into four
-- segments at keyframes, each encoded with libx264 in a job of its own,
-- then joined without re-encoding into output.mp4, with an HLS ladder, a
-- thumbnail sheet and ffprobe's report.
--
--   navette run recipes/video/encode.lua --wait
--
-- Your own video: source = navette.storage.put("inputs/talk.mp4", "talk.mp4").
local video = require "lib"

video.encode { parts = 4, crf = 23, code = "HEAD" }
