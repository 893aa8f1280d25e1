"""The audio recipe's steps (recipes/audio/lib.lua runs them as jobs):

  python3 audio.py chapter [N] renders chapter N (else $NAVETTE_PARAM_CHAPTER)
                               of $NAVETTE_INPUTS/script.txt to speech
                               (espeak-ng); brings it near -16 LUFS with a
                               gain and a peak limiter (ffmpeg's alimiter,
                               at 192 kHz, ceiling -3 dBFS), then normalises
                               it to -16 LUFS integrated with ffmpeg's
                               loudnorm in two passes (measure, then apply a
                               linear gain): chapter.wav (48 kHz mono) and
                               chapter.json (title, duration in samples and
                               seconds, the passes' figures, the loudness
                               ebur128 measures).
  python3 audio.py episode     joins the chapters ($NAVETTE_INPUTS/wav/1..,
                               json/1..), mixes a music bed made with sox
                               under the voice with ducking (sidechain
                               compression), normalises the mix to -16 LUFS
                               the same way, and encodes episode.opus and
                               episode.mp3 with a chapter mark per chapter;
                               each file is checked here with ffprobe (its
                               chapter marks against the chapters' sample
                               counts, to the millisecond) and ebur128;
                               report.json holds each file's loudness, true
                               peak, measured bitrate and chapter marks.

The script is UTF-8 text; a line "# Title" starts a chapter. Anything that
is not such a script, a tool that fails, or an encoded file whose chapter
marks are off ends the step with "audio: FAILED: <why>", exit 2.
"""

import json
import math
import os
import re
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
# espeak-ng's speech has peaks some 19 dB above its loudness: at -16 LUFS
# they would pass 0 dBTP, and loudnorm, asked for a linear gain, would fall
# back to its dynamic mode (it does when the gain would take the true peak
# past TRUE_PEAK). So a limiter first, run at 4x the rate so that its
# ceiling holds for the peaks between samples too, driven until the gain
# loudnorm then applies leaves the peaks HEADROOM dB under TRUE_PEAK.
LIMIT_DBFS = -3.0
OVERSAMPLE = 192000
HEADROOM = 0.2
# the music bed plays on this long after the voice (seconds)
TAIL = 2.0
# Ogg's CHAPTERxxx tags (HH:MM:SS.mmm) and ID3's CHAP frames (whole
# milliseconds) both hold chapter times to the millisecond: a mark more
# than that from its chapter's first sample is wrong.
RESOLUTION = 0.001
# the files the episode writes: encoder options, and whether the container
# keeps a chapter's end (Ogg keeps starts only: ffprobe ends the last
# chapter at the stream's end, which the encoder's last 20 ms frame can
# lengthen, so that end is checked within one frame)
ENCODINGS = (
    ("episode.opus", ["-c:a", "libopus", "-b:a", "64k", "-vbr",
                      "constrained"], False),
    ("episode.mp3", ["-c:a", "libmp3lame", "-b:a", "128k"], True),
)
OPUS_FRAME = 0.02


def fail(message):
    steps.fail(message)


def run(args, what):
    """Runs a tool; its stderr (where ffmpeg reports) is returned."""
    return steps.run(args, what)[1]


def probe(args, path, what):
    """ffprobe's JSON about path (args: what to show)."""
    out = steps.run(["ffprobe", "-v", "error"] + args + ["-of", "json", path],
                    "ffprobe " + what)[0]
    try:
        return json.loads(out)
    except ValueError:
        fail("%s: ffprobe printed no JSON for %s" % (what, path))


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
    """The first pass: loudnorm's measurement of src, as a dict.

    loudnorm measures as it filters, and in its dynamic mode (where it
    starts without figures) it measures a file of some seconds up to 0.2 LU
    off from what it measures in its linear mode, as in the second pass;
    so the first pass runs it in linear mode at 0 dB (the figures it is
    given only make that gain 0 and linear), and the second pass's gain is
    worked out from what it will itself measure."""
    err = run(["ffmpeg", "-hide_banner", "-nostats", "-i", src, "-af",
               "loudnorm=I=%g:TP=%g:LRA=%g:measured_I=%g:measured_TP=-99:"
               "measured_LRA=1:measured_thresh=%g:linear=true:"
               "print_format=json"
               % (TARGET_LUFS, TRUE_PEAK, LRA, TARGET_LUFS, TARGET_LUFS - 10),
               "-f", "null", "-"], what)
    m = re.search(r"\{[^{}]*\"input_i\"[^{}]*\}", err, re.S)
    if not m:
        fail("%s: loudnorm printed no measurement" % what)
    measured = json.loads(m.group(0))
    if not math.isfinite(float(measured["input_i"])):
        fail("%s: %s is silent (loudness %s)" % (what, src,
                                                 measured["input_i"]))
    if measured.get("normalization_type") != "linear":
        fail("%s: loudnorm did not measure in its linear mode (%s)"
             % (what, measured.get("normalization_type")))
    return measured


def loudnorm_apply(src, dst, measured, what, extra=()):
    """The second pass, asked for a linear gain from the first's figures
    -> loudnorm's report, whose normalization_type says whether it was
    (linear) or fell back to its dynamic mode (dynamic)."""
    af = ("loudnorm=I=%g:TP=%g:LRA=%g:measured_I=%s:measured_TP=%s:"
          "measured_LRA=%s:measured_thresh=%s:offset=%s:linear=true:"
          "print_format=json"
          % (TARGET_LUFS, TRUE_PEAK, LRA, measured["input_i"],
             measured["input_tp"], measured["input_lra"],
             measured["input_thresh"], measured["target_offset"]))
    err = run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", src,
               "-af", af, "-ar", str(RATE)] + list(extra) + [dst], what)
    m = re.search(r"\{[^{}]*\"output_i\"[^{}]*\}", err, re.S)
    if not m:
        fail("%s: loudnorm printed no report" % what)
    applied = json.loads(m.group(0))
    if applied.get("normalization_type") != "linear":
        # said in the log and in the JSON; the README says so
        print("audio: %s: loudnorm could not apply a linear gain (the true "
              "peak would pass %g dBTP) and normalised dynamically"
              % (what, TRUE_PEAK), flush=True)
    return applied


def normalise(src, dst, what, extra=()):
    """src to -16 LUFS in dst: a gain and the limiter (LIMIT_DBFS), then
    loudnorm's two passes -> (src's measurement, the limiter's figures,
    the first pass's, the second's)."""
    first = loudnorm_measure(src, "loudnorm (measure %s)" % what)
    drive = 0.0
    for _ in range(4):
        gain = TARGET_LUFS - float(first["input_i"]) + drive
        run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", src, "-af",
             "aresample=%d,volume=%.2fdB,alimiter=limit=%.4f:level=false:"
             "latency=true,aresample=%d"
             % (OVERSAMPLE, gain, 10 ** (LIMIT_DBFS / 20), RATE),
             "-c:a", "pcm_f32le", "limited.wav"],
            "ffmpeg (gain, limiter: %s)" % what)
        measured = loudnorm_measure("limited.wav",
                                    "loudnorm (measure %s, limited)" % what)
        # the true peak after loudnorm's linear gain, under TRUE_PEAK?
        peak = (float(measured["input_tp"]) + TARGET_LUFS
                - float(measured["input_i"]))
        if peak <= TRUE_PEAK - HEADROOM:
            break
        drive += peak - (TRUE_PEAK - HEADROOM) + 0.5
    limiter = {"gain_db": round(gain, 2), "drive_db": round(drive, 2),
               "ceiling_dbfs": LIMIT_DBFS}
    applied = loudnorm_apply("limited.wav", dst, measured,
                             "loudnorm (apply to %s)" % what, extra)
    return first, limiter, measured, applied


def samples(path, what):
    """(sample rate, samples) of a WAV file."""
    info = probe(["-show_entries", "stream=sample_rate,duration_ts"], path,
                 what)
    try:
        stream = info["streams"][0]
        return int(stream["sample_rate"]), int(stream["duration_ts"])
    except (KeyError, IndexError, ValueError, TypeError):
        fail("%s: ffprobe cannot count the samples of %s" % (what, path))


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
    wav = os.path.join(out, "chapter.wav")
    speech, limiter, measured, applied = normalise(
        raw, wav, "chapter %d" % n, ["-ac", "1"])
    i, tp = ebur128(wav, "ebur128")
    rate, count = samples(wav, "chapter")
    info = {"chapter": n, "title": title, "samples": count,
            "sample_rate": rate, "duration": round(count / rate, 3),
            "speech": speech, "limiter": limiter,
            "measured": measured, "applied": applied,
            "normalization": applied.get("normalization_type"),
            "integrated_lufs": i, "true_peak_dbtp": tp}
    with open(os.path.join(out, "chapter.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")
    print("audio: chapter %d: %.3f s, %.1f LUFS, %.1f dBTP, %s gain"
          % (n, info["duration"], i, tp, info["normalization"]), flush=True)


def clock(ms):
    """HH:MM:SS.mmm of a time in whole milliseconds."""
    s, ms = divmod(ms, 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return "%02d:%02d:%02d.%03d" % (h, m, s, ms)


def escape(value):
    """A value as ffmpeg's metadata file reads it."""
    return re.sub(r"([=;#\\])", r"\\\1", value.replace("\n", " "))


def metadata_files(title, marks):
    """The chapter marks [(start ms, end ms, title)] as two ffmpeg
    metadata files: opus.meta, Ogg's chapter tags written here (ffmpeg
    5.1's Ogg writer formats its own a second late when the milliseconds
    carry), and mp3.meta, chapters that ffmpeg writes as ID3 CHAP frames."""
    ogg = [";FFMETADATA1"]
    for k, (start, _, name) in enumerate(marks):
        # CHAPTERxxx before its NAME: ffprobe's Ogg reader drops a name
        # whose chapter it has not seen yet
        ogg += ["CHAPTER%03d=%s" % (k, clock(start)),
                "CHAPTER%03dNAME=%s" % (k, escape(name))]
    ogg.append("title=" + escape(title))
    mp3 = [";FFMETADATA1", "title=" + escape(title)]
    for start, end, name in marks:
        mp3 += ["[CHAPTER]", "TIMEBASE=1/1000", "START=%d" % start,
                "END=%d" % end, "title=" + escape(name)]
    for path, lines in (("opus.meta", ogg), ("mp3.meta", mp3)):
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


def check_marks(path, name, marks, keeps_end):
    """The chapter marks ffprobe reads in path against marks [(start ms,
    end ms, title)] -> what it read, [{start, end, title}] in seconds."""
    got = probe(["-show_chapters"], path, name).get("chapters", [])
    if len(got) != len(marks):
        fail("%s has %d chapter marks, not %d: `ffprobe -show_chapters "
             "%s` lists them" % (name, len(got), len(marks), name))
    read = [{"start": float(c["start_time"]), "end": float(c["end_time"]),
             "title": c.get("tags", {}).get("title")} for c in got]
    for k, (mark, (_, _, title)) in enumerate(zip(read, marks), 1):
        if mark["title"] != title:
            fail("%s: chapter %d is titled %r, not %r"
                 % (name, k, mark["title"], title))
    for field in ("start", "end"):
        for k, (mark, want) in enumerate(zip(read, marks), 1):
            slack = RESOLUTION
            if field == "end" and k == len(marks) and not keeps_end:
                slack = OPUS_FRAME + RESOLUTION
            at, want = mark[field], want[0 if field == "start" else 1] / 1000
            # 1e-6: ffprobe prints seconds with six decimals
            if abs(at - want) > slack + 1e-6:
                fail("%s: chapter %d %ss at %.3f s, not %.3f s (off by more "
                     "than %g ms): the muxer wrote the mark wrong; "
                     "`ffprobe -show_chapters %s` shows the marks"
                     % (name, k, field, at, want, slack * 1000, name))
    return read


def bitrate(path, what):
    """The file's average bitrate in kb/s, as ffprobe measures it (its
    size over its duration, container included)."""
    fmt = probe(["-show_entries", "format=bit_rate,size,duration"], path,
                what).get("format", {})
    try:
        if "bit_rate" in fmt:
            return round(int(fmt["bit_rate"]) / 1000, 1)
        return round(int(fmt["size"]) * 8 / float(fmt["duration"]) / 1000, 1)
    except (KeyError, ValueError, ZeroDivisionError):
        fail("%s: ffprobe cannot measure the bitrate of %s" % (what, path))


def episode():
    inputs = os.environ["NAVETTE_INPUTS"]
    out = os.environ["NAVETTE_OUTPUTS"]
    count = len(os.listdir(os.path.join(inputs, "wav")))
    infos, wavs, lengths = [], [], []
    for k in range(1, count + 1):
        with open(os.path.join(inputs, "json", str(k))) as f:
            infos.append(json.load(f))
        wavs.append(os.path.join(inputs, "wav", str(k)))
        rate, n = samples(wavs[-1], "chapter %d" % k)
        if rate != RATE:
            fail("chapter %d is at %d Hz, not %d" % (k, rate, RATE))
        lengths.append(n)
    # the voice: the chapters one after another, sample for sample
    with open("chapters.txt", "w") as f:
        for w in wavs:
            f.write("file '%s'\n" % w.replace("'", "'\\''"))
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-f", "concat",
         "-safe", "0", "-i", "chapters.txt", "-ar", str(RATE), "-ac", "1",
         "voice.wav"], "ffmpeg (join)")
    voice = samples("voice.wav", "join")[1]
    if voice != sum(lengths):
        fail("the joined voice has %d samples, its chapters %d"
             % (voice, sum(lengths)))
    bed = voice + int(TAIL * RATE)
    # the bed: a quiet chord from sox, faded in and out, TAIL s longer
    run(["sox", "-n", "-r", str(RATE), "-c", "1", "bed.wav", "synth",
         "%ds" % bed, "sine", "220", "sine", "277.18", "sine", "329.63",
         "tremolo", "0.2", "40", "fade", "t", "1.5", "%ds" % bed, "1.5",
         "gain", "-n", "-18"], "sox (bed)")
    # ducking: the bed compressed whenever the voice speaks (the voice
    # padded with silence to the bed's length, or the compressor would stop
    # with it, and the bed's fade-out with it), then mixed
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", "bed.wav", "-i",
         "voice.wav", "-filter_complex",
         "[1:a]asplit=2[sc][v];[sc]apad=whole_len=%d[pad];"
         "[0:a][pad]sidechaincompress=threshold=0.02:ratio=10:attack=20:"
         "release=400[duck];"
         "[v][duck]amix=inputs=2:duration=longest:normalize=0[mix]" % bed,
         "-map", "[mix]", "-ar", str(RATE), "mix.wav"], "ffmpeg (duck, mix)")
    _, limiter, measured, applied = normalise("mix.wav", "episode.wav",
                                              "the mix")
    # chapter marks from the chapters' samples (the voice starts at 0);
    # the last chapter ends with the episode
    end = round(samples("episode.wav", "mix")[1] * 1000 / RATE)
    starts = [round(sum(lengths[:k]) * 1000 / RATE) for k in range(count)]
    marks = [(starts[k], starts[k + 1] if k + 1 < count else end,
              infos[k]["title"]) for k in range(count)]
    metadata_files(os.environ.get("AUDIO_TITLE", "navette episode"), marks)
    report = {"target_lufs": TARGET_LUFS, "chapters": [], "files": {},
              "mix": {"normalization": applied.get("normalization_type"),
                      "limiter": limiter, "measured": measured,
                      "applied": applied}}
    for name, codec, keeps_end in ENCODINGS:
        meta = "opus.meta" if name.endswith(".opus") else "mp3.meta"
        # Ogg's chapters are the tags in opus.meta, so none are mapped
        chapter_map = "-1" if meta == "opus.meta" else "1"
        # an encoder changes the loudness a little (a low-pass, padding):
        # measured after encoding, and encoded once more with the gain
        # that brings it to the target when it is off by more than 0.2 LU
        gain = 0.0
        for _ in range(2):
            run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i",
                 "episode.wav", "-i", meta, "-map", "0:a",
                 "-map_metadata", "1", "-map_chapters", chapter_map, "-af",
                 "volume=%.2fdB" % gain] + codec + [os.path.join(out, name)],
                "ffmpeg (encode %s)" % name)
            i, tp = ebur128(os.path.join(out, name), "ebur128 " + name)
            if abs(TARGET_LUFS - i) <= 0.2:
                break
            gain += TARGET_LUFS - i
        path = os.path.join(out, name)
        read = check_marks(path, name, marks, keeps_end)
        fmt = probe(["-show_entries", "format=duration"], path, name)
        kbps = bitrate(path, name)
        report["files"][name] = {
            "integrated_lufs": i, "true_peak_dbtp": tp,
            "duration": round(float(fmt["format"]["duration"]), 3),
            "bit_rate_kbps": kbps, "encoder": " ".join(codec[1::2]),
            "chapters": read}
        print("audio: %s: %.1f LUFS, %.1f dBTP, %.1f kb/s (measured), "
              "%.2f s, chapter marks at %s s (as cut, to the ms)"
              % (name, i, tp, kbps, report["files"][name]["duration"],
                 ", ".join("%.3f" % m["start"] for m in read)), flush=True)
    for k, info in enumerate(infos):
        entry = {key: info.get(key) for key in (
            "chapter", "title", "samples", "duration", "integrated_lufs",
            "true_peak_dbtp", "normalization")}
        entry["start"] = starts[k] / 1000
        report["chapters"].append(entry)
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
