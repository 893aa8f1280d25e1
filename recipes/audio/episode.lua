-- Audio: a three-chapter script (script.txt) rendered to speech chapter by
-- chapter, each at -16 LUFS, then joined under a ducked music bed into
-- episode.opus and episode.mp3 with chapter marks and a loudness report.
--
--   navette run recipes/audio/episode.lua --wait
local navette = require "navette"
local audio = require "lib"

audio.episode {
  script = navette.storage.put("inputs/audio/script.txt", "script.txt"),
  chapters = 3,
  title = "How work leaves the laptop",
  code = "HEAD",
}
