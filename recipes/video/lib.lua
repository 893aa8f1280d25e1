-- The video pattern of the catalogue: a source video cut into segments at
-- keyframes, each encoded with libx264 on whichever node runs it (one job
-- per segment), then joined without re-encoding into output.mp4 with the
-- source's sound, with an HLS ladder of two renditions, a thumbnail sheet
-- and ffprobe's report; the join fails when a frame was lost or doubled at
-- a boundary (recipes/video/video.py).
local navette = require "navette"

local video = {}

-- opts:
--   source    the source video in storage (what navette.storage.put
--             returned); without it a job makes one (ffmpeg's testsrc2 and
--             sine, `seconds` long, 12)
--   parts     segments (4), crf libx264's CRF (23)
--   name      the jobs' name ("encode"; NAME-source, NAME-join)
--   image, code  as in training.sweep ("library" by default)
-- -> { source = the source job or nil, segments = the segments' jobs,
--      join = the join }
function video.encode(opts)
  opts = opts or {}
  local parts = opts.parts or 4
  if math.type(parts) ~= "integer" or parts < 1 or parts > 100 then
    error("video.encode: parts must be a whole number from 1 to 100", 2)
  end
  local crf = opts.crf or 23
  if math.type(crf) ~= "integer" or crf < 0 or crf > 51 then
    error("video.encode: crf must be a whole number from 0 to 51", 2)
  end
  local name = opts.name or "encode"
  local code = opts.code or "library"
  local image = opts.image or navette.context().images.catalogue
  local failure = {
    log_patterns = { "video: FAILED" },
    hint = "the log says why (video: FAILED: ...): a source that is not a "
        .. "video ffprobe reads, a frame lost or doubled at a segment "
        .. "boundary, or ffmpeg missing on the node",
  }
  local source, source_input = nil, opts.source
  if source_input == nil then
    source = navette.job {
      name = name .. "-source", code = code, image = image,
      command = { "python3", "recipes/video/video.py", "source" },
      env = { VIDEO_SECONDS = tostring(opts.seconds or 12) },
      resources = { cpus = 1, memory = "512MiB", time_limit = "10m" },
      success = { exit_code = 0, outputs = { "source.mp4" } },
      failure = failure,
    }
    source_input = source:output("source.mp4")
  end
  local numbers = {}
  for i = 1, parts do numbers[i] = i end
  local segments = navette.sweep {
    job = {
      name = name, code = code, image = image,
      inputs = { ["source.mp4"] = source_input },
      command = { "python3", "recipes/video/video.py", "segment" },
      env = { VIDEO_PARTS = tostring(parts), VIDEO_CRF = tostring(crf) },
      resources = { cpus = 1, memory = "512MiB", time_limit = "20m" },
      success = { exit_code = 0, outputs = { "segment.mp4", "segment.json" } },
      failure = failure,
    },
    matrix = { part = numbers },
  }
  local join = navette.job {
    name = name .. "-join", code = code, image = image,
    inputs = { ["source.mp4"] = source_input,
               segments = navette.outputs(segments, "segment.mp4") },
    command = { "python3", "recipes/video/video.py", "join" },
    resources = { cpus = 1, memory = "1GiB", time_limit = "20m" },
    success = { exit_code = 0,
                outputs = { "output.mp4", "report.json", "probe.json",
                            "thumbnails.png", "hls/master.m3u8" } },
    failure = failure,
  }
  return { source = source, segments = segments, join = join }
end

return video
