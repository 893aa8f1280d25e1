"""The vision recipe's steps (recipes/vision/lib.lua runs them as jobs):

  python3 vision.py shard   shard $NAVETTE_PARAM_SHARD of VISION_SHARDS
                            takes images k, k + N, ... of
                            $NAVETTE_INPUTS/image-1.. (VISION_NAMES, a
                            JSON list, names them in that order), finds
                            faces with OpenCV's Haar cascade
                            ($NAVETTE_INPUTS/cascade.xml, opencv-data's
                            haarcascade_frontalface_default.xml) and
                            computes simple features: shard.json.
  python3 vision.py merge   the shards' findings ($NAVETTE_INPUTS/shards/1..)
                            and the images: report.json (boxes and features
                            per image) and contact-sheet.html (a PNG
                            thumbnail per image with its boxes drawn,
                            embedded).

An image OpenCV cannot read, or a cascade that does not load, ends the
step with "vision: FAILED: <why>", exit 2.
"""

import base64
import json
import os
import sys

import cv2

# (recipes/steps.py: what the catalogue's scripts share)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import steps  # noqa: E402
steps.NAME = "vision"


def fail(message):
    steps.fail(message)


def names():
    try:
        got = json.loads(os.environ.get("VISION_NAMES", "[]"))
    except ValueError:
        fail("VISION_NAMES is not a JSON list")
    if not got:
        fail("no image to look at (VISION_NAMES is empty)")
    return got


def read_image(k, name):
    path = os.path.join(os.environ["NAVETTE_INPUTS"], "image-%d" % k)
    img = cv2.imread(path, cv2.IMREAD_COLOR)
    if img is None:
        fail("image-%d (%s) is not an image OpenCV reads" % (k, name))
    return img


def features(img):
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    edges = cv2.Canny(gray, 100, 200)
    b, g, r = (float(c) for c in cv2.mean(img)[:3])
    return {"width": int(img.shape[1]), "height": int(img.shape[0]),
            "mean_rgb": [round(r, 2), round(g, 2), round(b, 2)],
            "brightness": round(float(gray.mean()), 2),
            "contrast": round(float(gray.std()), 2),
            "edge_density": round(float((edges > 0).mean()), 4),
            "sharpness": round(float(cv2.Laplacian(gray, cv2.CV_64F).var()),
                               2)}


def shard():
    inputs = os.environ["NAVETTE_INPUTS"]
    shards = int(os.environ.get("VISION_SHARDS", "2"))
    k = int(os.environ.get("NAVETTE_PARAM_SHARD", "1"))
    cascade = cv2.CascadeClassifier(os.path.join(inputs, "cascade.xml"))
    if cascade.empty():
        fail("cascade.xml is not a Haar cascade OpenCV loads")
    found = {}
    all_names = names()
    for i in range(k, len(all_names) + 1, shards):
        name = all_names[i - 1]
        img = read_image(i, name)
        gray = cv2.equalizeHist(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
        faces = cascade.detectMultiScale(gray, scaleFactor=1.1,
                                         minNeighbors=5, minSize=(30, 30))
        boxes = [[int(v) for v in f] for f in faces]
        found[name] = {"index": i, "faces": boxes, "features": features(img)}
        print("vision: %s: %d face(s) %s" % (name, len(boxes), boxes),
              flush=True)
    with open(os.path.join(os.environ["NAVETTE_OUTPUTS"], "shard.json"),
              "w") as f:
        json.dump({"shard": k, "shards": shards, "images": found}, f,
                  indent=1, sort_keys=True)
        f.write("\n")


def merge():
    inputs = os.environ["NAVETTE_INPUTS"]
    out = os.environ["NAVETTE_OUTPUTS"]
    all_names = names()
    images = {}
    folder = os.path.join(inputs, "shards")
    for n in range(1, len(os.listdir(folder)) + 1):
        with open(os.path.join(folder, str(n))) as f:
            images.update(json.load(f)["images"])
    missing = [n for n in all_names if n not in images]
    if missing:
        fail("no shard looked at %s" % ", ".join(missing))
    rows = []
    for name in all_names:
        entry = images[name]
        img = read_image(entry["index"], name)
        for x, y, w, h in entry["faces"]:
            cv2.rectangle(img, (x, y), (x + w, y + h), (0, 0, 255), 3)
        scale = 240.0 / max(img.shape[:2])
        thumb = cv2.resize(img, (max(1, int(img.shape[1] * scale)),
                                 max(1, int(img.shape[0] * scale))),
                           interpolation=cv2.INTER_AREA)
        ok, png = cv2.imencode(".png", thumb)
        if not ok:
            fail("cannot encode the thumbnail of %s" % name)
        rows.append("<figure><img alt=\"%s\" src=\"data:image/png;base64,%s\">"
                    "<figcaption>%s: %d face(s)</figcaption></figure>"
                    % (name, base64.b64encode(png.tobytes()).decode(),
                       name, len(entry["faces"])))
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"images": images, "cascade":
                   "haarcascade_frontalface_default.xml",
                   "opencv": cv2.__version__}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "contact-sheet.html"), "w") as f:
        f.write("<!doctype html>\n<meta charset=\"utf-8\">\n"
                "<title>navette vision: contact sheet</title>\n"
                "<style>figure{display:inline-block;margin:8px}</style>\n"
                + "\n".join(rows) + "\n")
    print("vision: %d images, %d faces" % (
        len(images), sum(len(e["faces"]) for e in images.values())),
        flush=True)


def main():
    steps = {"shard": shard, "merge": merge}
    if len(sys.argv) != 2 or sys.argv[1] not in steps:
        fail("usage: vision.py shard | merge")
    steps[sys.argv[1]]()


if __name__ == "__main__":
    main()
