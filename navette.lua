-- The project file of navette's own repository: what recipes/first-job.lua
-- and the other shipped recipes run under. Profiles name targets; `local`
-- is built in and needs nothing here.
return {
  name = "navette",
  -- The catalogue's maintenance tasks (navette maintain --list shows
  -- them; each says `skipped` where the profile lacks what it needs).
  maintenance = {
    "recipes/maintenance/archive-logs.lua",
    "recipes/maintenance/rebuild-image.lua",
    "recipes/maintenance/retest-after-update.lua",
    "recipes/maintenance/rotate-keys.lua",
  },
  -- Files outside the repository that the catalogue's recipes upload as
  -- inputs (navette.storage.put(key, { dataset = NAME })): the first path
  -- that exists on this machine.
  datasets = {
    -- scikit-learn's handwritten digits (Debian: python3-sklearn)
    digits = {
      "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
      "/usr/local/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
    },
    -- sample images of scikit-image (Debian: python3-skimage)
    ["skimage-astronaut"] = "/usr/lib/python3/dist-packages/skimage/data/astronaut.png",
    ["skimage-chelsea"] = "/usr/lib/python3/dist-packages/skimage/data/chelsea.png",
    ["skimage-coffee"] = "/usr/lib/python3/dist-packages/skimage/data/coffee.png",
    ["skimage-camera"] = "/usr/lib/python3/dist-packages/skimage/data/camera.png",
    ["skimage-coins"] = "/usr/lib/python3/dist-packages/skimage/data/coins.png",
    -- OpenCV's frontal face cascade (Debian: opencv-data)
    haarcascade_frontalface_default =
      "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml",
  },
}
