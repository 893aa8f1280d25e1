-- The vision pattern of the catalogue: images sharded over N jobs, each
-- finding faces with OpenCV's Haar cascade and computing simple features
-- per image, then a merge job writing report.json and contact-sheet.html
-- with the boxes drawn (recipes/vision/vision.py).
local navette = require "navette"

local vision = {}

-- The images python3-skimage ships and the cascade opencv-data ships.
-- Where they are on a machine: the project file's datasets (see
-- navette.lua), else (brought as a library) where Debian's packages put
-- them.
vision.IMAGES = { "astronaut", "chelsea", "coffee", "camera", "coins" }
vision.CASCADE = "haarcascade_frontalface_default"
vision.IMAGE_DIR = "/usr/lib/python3/dist-packages/skimage/data/"
vision.CASCADE_PATH = "/usr/share/opencv4/haarcascades/" .. vision.CASCADE
                      .. ".xml"

-- Uploads the images and the cascade: -> images (a list of {name,
-- object}), cascade (an object).
function vision.upload_data()
  local images = {}
  for i, name in ipairs(vision.IMAGES) do
    images[i] = { name = name, object = navette.storage.put(
      "datasets/vision/" .. name .. ".png", { dataset = "skimage-" .. name,
        paths = { vision.IMAGE_DIR .. name .. ".png" } }) }
  end
  return images, navette.storage.put("datasets/vision/" .. vision.CASCADE
    .. ".xml", { dataset = vision.CASCADE, paths = { vision.CASCADE_PATH } })
end

-- opts:
--   images    a list of { name = NAME, object = what storage.put returned }
--   cascade   the cascade in storage (both default to upload_data())
--   shards    how many jobs share the images (2)
--   name      the jobs' name ("faces"; the merge is NAME-merge)
--   image, code  as in training.sweep ("library" by default)
-- -> { shards = the shards' jobs, merge = the merge }
function vision.pipeline(opts)
  opts = opts or {}
  local images, cascade = opts.images, opts.cascade
  if images == nil or cascade == nil then
    local up_images, up_cascade = vision.upload_data()
    images, cascade = images or up_images, cascade or up_cascade
  end
  local shards = opts.shards or 2
  if math.type(shards) ~= "integer" or shards < 1 or shards > #images then
    error("vision.pipeline: shards must be a whole number from 1 to the "
          .. "number of images (" .. #images .. ")", 2)
  end
  local name = opts.name or "faces"
  local code = opts.code or "library"
  local image = opts.image or navette.context().images.catalogue
  local inputs, names = { ["cascade.xml"] = cascade }, {}
  for i, img in ipairs(images) do
    inputs["image-" .. i] = img.object
    names[i] = '"' .. img.name .. '"'
  end
  local numbers = {}
  for i = 1, shards do numbers[i] = i end
  local env = { VISION_NAMES = "[" .. table.concat(names, ",") .. "]",
                VISION_SHARDS = tostring(shards) }
  local failure = {
    log_patterns = { "vision: FAILED" },
    hint = "the log says why (vision: FAILED: ...): an image OpenCV cannot "
        .. "read, or a cascade file that is not opencv-data's",
  }
  local parts = navette.sweep {
    job = {
      name = name, code = code, image = image, inputs = inputs,
      command = { "python3", "recipes/vision/vision.py", "shard" },
      env = env,
      resources = { cpus = 1, memory = "1GiB", time_limit = "10m" },
      success = { exit_code = 0, outputs = { "shard.json" } },
      failure = failure,
    },
    matrix = { shard = numbers },
  }
  local merge_inputs = { shards = navette.outputs(parts, "shard.json") }
  for k, v in pairs(inputs) do
    if k:match("^image%-") then merge_inputs[k] = v end
  end
  local merge = navette.job {
    name = name .. "-merge", code = code, image = image,
    inputs = merge_inputs,
    command = { "python3", "recipes/vision/vision.py", "merge" },
    env = env,
    resources = { cpus = 1, memory = "1GiB", time_limit = "10m" },
    success = { exit_code = 0,
                outputs = { "report.json", "contact-sheet.html" } },
    failure = failure,
  }
  return { shards = parts, merge = merge }
end

return vision
