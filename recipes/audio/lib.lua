-- The audio pattern of the catalogue: a text script with chapters ("# Title"
-- lines) rendered to speech chapter by chapter (espeak-ng, one job per
-- chapter), each brought to -16 LUFS by a peak limiter and then a linear
-- gain from ffmpeg's loudnorm in two passes (measure, then apply); then one
-- job joins them under a sox music bed, ducked under the voice, normalises
-- the mix the same way, and encodes episode.opus (64 kb/s constrained VBR)
-- and episode.mp3 (128 kb/s) with a chapter mark per chapter, checked with
-- ffprobe to the millisecond, and a report of each file's loudness and
-- measured bitrate (recipes/audio/audio.py).
local navette = require "navette"

local audio = {}

-- opts:
--   script     the script in storage (what navette.storage.put returned):
--              required
--   chapters   how many chapters it has (3); a job per chapter
--   voice      espeak-ng's voice ("en-us"), speed words per minute (160)
--   title      the episode's title
--   name       the jobs' name ("chapter"; the join is NAME-episode)
--   image, code  as in training.sweep ("library" by default)
-- -> { chapters = the chapters' jobs, episode = the join }
function audio.episode(opts)
  opts = opts or {}
  if opts.script == nil then
    error("audio.episode: script is required: the script in storage "
          .. "(navette.storage.put(\"inputs/script.txt\", \"script.txt\"))", 2)
  end
  local count = opts.chapters or 3
  if math.type(count) ~= "integer" or count < 1 or count > 200 then
    error("audio.episode: chapters must be a whole number from 1 to 200", 2)
  end
  local name = opts.name or "chapter"
  local code = opts.code or "library"
  local image = opts.image or navette.context().images.catalogue
  local numbers = {}
  for i = 1, count do numbers[i] = i end
  local failure = {
    log_patterns = { "audio: FAILED" },
    hint = "the log says why (audio: FAILED: ...): a script that is not "
        .. "UTF-8 text with '# Title' chapter lines, fewer chapters than "
        .. "`chapters`, a tool missing on the node (espeak-ng, ffmpeg, "
        .. "sox), or an encoded file whose chapter marks ffprobe reads off",
  }
  local parts = navette.sweep {
    job = {
      name = name, code = code, image = image,
      inputs = { ["script.txt"] = opts.script },
      command = { "python3", "recipes/audio/audio.py", "chapter" },
      env = { AUDIO_VOICE = opts.voice or "en-us",
              AUDIO_SPEED = tostring(opts.speed or 160) },
      resources = { cpus = 1, memory = "512MiB", time_limit = "10m" },
      success = { exit_code = 0, outputs = { "chapter.wav", "chapter.json" } },
      failure = failure,
    },
    matrix = { chapter = numbers },
  }
  local episode = navette.job {
    name = name .. "-episode", code = code, image = image,
    inputs = { wav = navette.outputs(parts, "chapter.wav"),
               json = navette.outputs(parts, "chapter.json") },
    command = { "python3", "recipes/audio/audio.py", "episode" },
    env = { AUDIO_TITLE = opts.title or "navette episode" },
    resources = { cpus = 1, memory = "512MiB", time_limit = "15m" },
    success = { exit_code = 0,
                outputs = { "episode.opus", "episode.mp3", "report.json" } },
    failure = failure,
  }
  return { chapters = parts, episode = episode }
end

return audio
