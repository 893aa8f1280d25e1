"""The audio recipe's steps (recipes/audio/lib.lua runs them as jobs):

  python3 audio.py chapter [N] renders chapter N (else $NAVETTE_PARAM_CHAPTER) of $NAVETTE_INPUTS/script.txt
                               to speech (espeak-ng), normalised to -16 LUFS
                               integrated by ffmpeg's loudnorm in two passes
                               (measure, then apply): chapter.wav (48 kHz
                               mono) and chapter.json (title, duration, the
                               two passes' figures).
  python3 audio.py episode     joins the chapters ($NAVETTE_INPUTS/wav/1..,
                               json/1..), mixes a music bed made with sox
                               under the voice with ducking (sidechain
                               compression), normalises the mix to -16 LUFS
                               in two passes, and encodes episode.opus and
                               episode.mp3 with a chapter mark per chapter;
                               report.json holds each file's integrated
                               loudness and true peak (ffmpeg's ebur128).

The script is UTF-8 text; a line "# Title" starts a chapter. Anything that
is not such a script, or a tool that fails, ends the step with
"audio: FAILED: <why>", exit 2.
"""

import json
import os
import re
import subprocess
import sys

# (recipes/steps.py: what the catalogue's scripts share)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import steps  # noqa: E402
steps.NAME = "audio"

TARGET_LUFS = -16.0
TRUE_PEAK = -1.5
LRA = 11.0
RATE = 48000


def fail(message):
    steps.fail(message)


def run(args, what):
    """Runs a tool; its stderr (where ffmpeg reports) is returned."""
    return steps.run(args, what)[1]


def chapters(path):
    """[(title, text)] of the script, checked."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail("%s is not a UTF-8 text script (%s)" % (path, e))
    if "\0" in text:
        fail("%s holds NUL bytes: not a text script" % path)
    out = []
    for line in text.splitlines():
        m = re.match(r"^#\s+(\S.*)$", line)
        if m:
            out.append([m.group(1).strip(), []])
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            fail("%s: text before the first chapter heading ('# Title')"
                 % path)
    if not out:
        fail("%s has no chapter ('# Title' lines)" % path)
    result = []
    for title, lines in out:
        body = " ".join(l.strip() for l in lines if l.strip())
        if len(body) < 20:
            fail("%s: chapter '%s' has almost no text" % (path, title))
        result.append((title, body))
    return result


def loudnorm_measure(src, what):
    """The first pass: loudnorm's measurement of src, as a dict."""
    err = run(["ffmpeg", "-hide_banner", "-nostats", "-i", src, "-af",
               "loudnorm=I=%g:TP=%g:LRA=%g:print_format=json"
               % (TARGET_LUFS, TRUE_PEAK, LRA), "-f", "null", "-"], what)
    m = re.search(r"\{[^{}]*\"input_i\"[^{}]*\}", err, re.S)
    if not m:
        fail("%s: loudnorm printed no measurement" % what)
    return json.loads(m.group(0))


def loudnorm_apply(src, dst, measured, what, extra=()):
    """The second pass: linear normalisation with the first's figures."""
    af = ("loudnorm=I=%g:TP=%g:LRA=%g:measured_I=%s:measured_TP=%s:"
          "measured_LRA=%s:measured_thresh=%s:offset=%s:linear=true:"
          "print_format=json"
          % (TARGET_LUFS, TRUE_PEAK, LRA, measured["input_i"],
             measured["input_tp"], measured["input_lra"],
             measured["input_thresh"], measured["target_offset"]))
    err = run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", src,
               "-af", af, "-ar", str(RATE)] + list(extra) + [dst], what)
    m = re.search(r"\{[^{}]*\"output_i\"[^{}]*\}", err, re.S)
    return json.loads(m.group(0)) if m else None


def duration(path, what):
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                          "format=duration", "-of", "json", path],
                         stdout=subprocess.PIPE, check=False).stdout
    try:
        return float(json.loads(out)["format"]["duration"])
    except (ValueError, KeyError, TypeError):
        fail("%s: ffprobe cannot read %s" % (what, path))


def ebur128(path, what):
    """Integrated loudness (LUFS) and true peak (dBTP) of a file."""
    err = run(["ffmpeg", "-hide_banner", "-nostats", "-i", path, "-af",
               "ebur128=peak=true", "-f", "null", "-"], what)
    summary = err[err.rfind("Summary:"):]
    i = re.search(r"I:\s+(-?[\d.]+) LUFS", summary)
    tp = re.search(r"Peak:\s+(-?[\d.]+|-inf) dBFS", summary)
    if not i or not tp:
        fail("%s: ebur128 printed no summary for %s" % (what, path))
    return float(i.group(1)), float(tp.group(1))


def chapter(n):
    script = os.path.join(os.environ["NAVETTE_INPUTS"], "script.txt")
    out = os.environ["NAVETTE_OUTPUTS"]
    parts = chapters(script)
    if not 1 <= n <= len(parts):
        fail("the script has %d chapters: there is no chapter %d"
             % (len(parts), n))
    title, body = parts[n - 1]
    voice = os.environ.get("AUDIO_VOICE", "en-us")
    speed = os.environ.get("AUDIO_SPEED", "160")
    print("audio: chapter %d '%s' (%d characters), voice %s"
          % (n, title, len(body), voice), flush=True)
    raw = "speech.wav"
    run(["espeak-ng", "-v", voice, "-s", speed, "-w", raw, title + ". " + body],
        "espeak-ng")
    measured = loudnorm_measure(raw, "loudnorm (measure)")
    applied = loudnorm_apply(raw, os.path.join(out, "chapter.wav"), measured,
                             "loudnorm (apply)", ["-ac", "1"])
    i, tp = ebur128(os.path.join(out, "chapter.wav"), "ebur128")
    info = {"chapter": n, "title": title,
            "duration": round(duration(os.path.join(out, "chapter.wav"),
                                       "chapter"), 3),
            "measured": measured, "applied": applied,
            "integrated_lufs": i, "true_peak_dbtp": tp}
    with open(os.path.join(out, "chapter.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")
    print("audio: chapter %d: %.2f s, %.1f LUFS, %.1f dBTP"
          % (n, info["duration"], i, tp), flush=True)


def episode():
    inputs = os.environ["NAVETTE_INPUTS"]
    out = os.environ["NAVETTE_OUTPUTS"]
    count = len(os.listdir(os.path.join(inputs, "wav")))
    infos, wavs = [], []
    for k in range(1, count + 1):
        with open(os.path.join(inputs, "json", str(k))) as f:
            infos.append(json.load(f))
        wavs.append(os.path.join(inputs, "wav", str(k)))
    # the voice: the chapters one after another
    with open("chapters.txt", "w") as f:
        for w in wavs:
            f.write("file '%s'\n" % w.replace("'", "'\\''"))
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-f", "concat",
         "-safe", "0", "-i", "chapters.txt", "-ar", str(RATE), "-ac", "1",
         "voice.wav"], "ffmpeg (join)")
    total = duration("voice.wav", "join")
    # the bed: a quiet chord from sox, faded in and out, 2 s longer
    run(["sox", "-n", "-r", str(RATE), "-c", "1", "bed.wav", "synth",
         "%.2f" % (total + 2), "sine", "220", "sine", "277.18", "sine",
         "329.63", "tremolo", "0.2", "40", "fade", "t", "1.5",
         "%.2f" % (total + 2), "1.5", "gain", "-n", "-18"], "sox (bed)")
    # ducking: the bed compressed whenever the voice speaks, then mixed
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", "bed.wav", "-i",
         "voice.wav", "-filter_complex",
         "[1:a]asplit=2[sc][v];"
         "[0:a][sc]sidechaincompress=threshold=0.02:ratio=10:attack=20:"
         "release=400[duck];"
         "[v][duck]amix=inputs=2:duration=longest:normalize=0[mix]",
         "-map", "[mix]", "-ar", str(RATE), "mix.wav"], "ffmpeg (duck, mix)")
    measured = loudnorm_measure("mix.wav", "loudnorm (measure the mix)")
    loudnorm_apply("mix.wav", "episode.wav", measured,
                   "loudnorm (apply to the mix)")
    # chapter marks, from the chapters' durations (the voice starts at 0)
    meta, start = [";FFMETADATA1", "title=%s" % os.environ.get(
        "AUDIO_TITLE", "navette episode")], 0.0
    for info in infos:
        end = start + info["duration"]
        meta += ["[CHAPTER]", "TIMEBASE=1/1000", "START=%d" % (start * 1000),
                 "END=%d" % (end * 1000),
                 "title=%s" % re.sub(r"[=;#\\\n]", " ", info["title"])]
        start = end
    with open("chapters.meta", "w") as f:
        f.write("\n".join(meta) + "\n")
    report = {"target_lufs": TARGET_LUFS, "chapters": [], "files": {}}
    for name, codec in (("episode.opus", ["-c:a", "libopus", "-b:a", "64k"]),
                        ("episode.mp3", ["-c:a", "libmp3lame", "-b:a",
                                         "128k"])):
        # an encoder changes the loudness a little (a low-pass, padding):
        # measured after encoding, and encoded once more with the gain
        # that brings it to the target when it is off by more than 0.2 LU
        gain = 0.0
        for _ in range(2):
            run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i",
                 "episode.wav", "-i", "chapters.meta", "-map", "0:a",
                 "-map_metadata", "1", "-map_chapters", "1", "-af",
                 "volume=%.2fdB" % gain] + codec + [os.path.join(out, name)],
                "ffmpeg (encode %s)" % name)
            i, tp = ebur128(os.path.join(out, name), "ebur128 " + name)
            if abs(TARGET_LUFS - i) <= 0.2:
                break
            gain += TARGET_LUFS - i
        report["files"][name] = {
            "integrated_lufs": i, "true_peak_dbtp": tp,
            "duration": round(duration(os.path.join(out, name), name), 3)}
        print("audio: %s: %.1f LUFS, %.1f dBTP" % (name, i, tp), flush=True)
    for info in infos:
        report["chapters"].append({k: info[k] for k in (
            "chapter", "title", "duration", "integrated_lufs",
            "true_peak_dbtp")})
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    steps.scratch()
    if len(sys.argv) in (2, 3) and sys.argv[1] == "chapter":
        # N, else the sweep's parameter
        arg = sys.argv[2] if len(sys.argv) == 3 else os.environ.get(
            "NAVETTE_PARAM_CHAPTER", "")
        try:
            n = int(arg)
        except ValueError:
            fail("chapter N takes a number, not %r" % arg)
        chapter(n)
    elif len(sys.argv) == 2 and sys.argv[1] == "episode":
        episode()
    else:
        fail("usage: audio.py chapter N | episode")


if __name__ == "__main__":
    main()
