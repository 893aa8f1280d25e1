"""The video recipe's steps (recipes/video/lib.lua runs them as jobs):

  python3 video.py source      a demo source: ffmpeg's testsrc2 picture and
                               sine tone, VIDEO_SECONDS long (12), 25 fps,
                               640x360, a keyframe every 2 s: source.mp4.
  python3 video.py segment     segment $NAVETTE_PARAM_PART of VIDEO_PARTS:
                               the source ($NAVETTE_INPUTS/source.mp4) is
                               cut at keyframes (the k-th cut at the first
                               keyframe at or after k/N of its frames), and
                               this segment's frames are encoded with
                               libx264 at VIDEO_CRF (23), picture only:
                               segment.mp4 and segment.json (its frames).
  python3 video.py join        the segments ($NAVETTE_INPUTS/segments/1..)
                               joined without re-encoding (concat, stream
                               copy) with the source's sound: output.mp4;
                               an HLS ladder of two renditions (hls/), a
                               thumbnail sheet (thumbnails.png), ffprobe's
                               report (probe.json) and report.json. The
                               output must have the source's frame count
                               and duration: a frame lost or doubled at a
                               boundary fails the step.

A source ffprobe cannot read, or a tool that fails, ends the step with
"video: FAILED: <why>", exit 2.
"""

import json
import os
import sys

# (recipes/steps.py: what the catalogue's scripts share)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import steps  # noqa: E402
steps.NAME = "video"


def fail(message):
    steps.fail(message)


def run(args, what):
    """Runs a tool; its stdout is returned."""
    return steps.run(args, what)[0]


def probe(path, *args):
    out = run(["ffprobe", "-v", "error", "-of", "json"] + list(args) + [path],
              "%s is not a video ffprobe reads" % os.path.basename(path))
    try:
        return json.loads(out)
    except ValueError:
        fail("ffprobe gave no JSON for %s" % path)


def video_frames(path):
    """[(pts_time, key)] of every video frame of path, in order."""
    d = probe(path, "-select_streams", "v:0", "-show_entries",
              "frame=pts_time,key_frame")
    frames = [(float(f["pts_time"]), f.get("key_frame") == 1)
              for f in d.get("frames", []) if "pts_time" in f]
    if not frames:
        fail("%s has no video frame ffprobe can read: not a video" % path)
    return frames


def stream_info(path):
    d = probe(path, "-show_entries",
              "format=duration:stream=codec_type,codec_name,width,height,"
              "r_frame_rate,nb_read_frames", "-count_frames")
    v = [s for s in d.get("streams", []) if s.get("codec_type") == "video"]
    if not v:
        fail("%s has no video stream" % path)
    return {"duration": float(d["format"]["duration"]),
            "frames": int(v[0]["nb_read_frames"]),
            "codec": v[0]["codec_name"], "width": v[0]["width"],
            "height": v[0]["height"], "rate": v[0]["r_frame_rate"],
            "audio": any(s.get("codec_type") == "audio"
                         for s in d["streams"])}


def source():
    out = os.environ["NAVETTE_OUTPUTS"]
    secs = float(os.environ.get("VIDEO_SECONDS", "12"))
    run(["ffmpeg", "-hide_banner", "-nostats", "-y",
         "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25:duration=%g" % secs,
         "-f", "lavfi", "-i", "sine=frequency=440:beep_factor=4:duration=%g"
         % secs, "-c:v", "libx264", "-preset", "veryfast", "-crf", "18",
         "-g", "50", "-keyint_min", "50", "-sc_threshold", "0",
         "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", "-shortest",
         os.path.join(out, "source.mp4")], "ffmpeg (testsrc2)")
    info = stream_info(os.path.join(out, "source.mp4"))
    print("video: source %d frames, %.2f s" % (info["frames"],
                                              info["duration"]), flush=True)


def cuts(frames, parts):
    """The first frame of each part: part k starts at the first keyframe
    at or after k/parts of the frames (parts that would be empty merge)."""
    n = len(frames)
    keys = [i for i, (_, key) in enumerate(frames) if key]
    if not keys or keys[0] != 0:
        fail("the source does not start with a keyframe")
    starts = [0]
    for k in range(1, parts):
        want = (n * k + parts - 1) // parts
        at = next((i for i in keys if i >= want), n)
        starts.append(max(at, starts[-1]))
    starts.append(n)
    return starts


def segment():
    src = os.path.join(os.environ["NAVETTE_INPUTS"], "source.mp4")
    out = os.environ["NAVETTE_OUTPUTS"]
    parts = int(os.environ.get("VIDEO_PARTS", "4"))
    part = int(os.environ.get("NAVETTE_PARAM_PART", "1"))
    crf = os.environ.get("VIDEO_CRF", "23")
    frames = video_frames(src)
    starts = cuts(frames, parts)
    first, end = starts[part - 1], starts[part]
    count = end - first
    info = {"part": part, "parts": parts, "first_frame": first,
            "frames": count,
            "node": os.environ.get("SLURMD_NODENAME") or os.uname().nodename}
    print("video: segment %d/%d: frames %d to %d (%d), crf %s"
          % (part, parts, first, end - 1, count, crf), flush=True)
    if count > 0:
        # input seeking to a keyframe's time, then exactly `count` frames
        run(["ffmpeg", "-hide_banner", "-nostats", "-y",
             "-ss", "%.6f" % frames[first][0], "-i", src,
             "-map", "0:v:0", "-frames:v", str(count),
             "-c:v", "libx264", "-preset", "veryfast", "-crf", crf,
             "-g", "250", "-pix_fmt", "yuv420p", "-an",
             os.path.join(out, "segment.mp4")], "ffmpeg (libx264)")
        got = stream_info(os.path.join(out, "segment.mp4"))["frames"]
        if got != count:
            fail("segment %d has %d frames, not %d" % (part, got, count))
    else:
        open(os.path.join(out, "segment.mp4"), "wb").close()
    with open(os.path.join(out, "segment.json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
        f.write("\n")


def join():
    inputs = os.environ["NAVETTE_INPUTS"]
    out = os.environ["NAVETTE_OUTPUTS"]
    src = os.path.join(inputs, "source.mp4")
    folder = os.path.join(inputs, "segments")
    n = len(os.listdir(folder))
    with open("segments.txt", "w") as f:
        for k in range(1, n + 1):
            path = os.path.join(folder, str(k))
            if os.path.getsize(path) > 0:
                f.write("file '%s'\n" % path.replace("'", "'\\''"))
    output = os.path.join(out, "output.mp4")
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-f", "concat",
         "-safe", "0", "-i", "segments.txt", "-i", src, "-map", "0:v:0",
         "-map", "1:a:0?", "-c:v", "copy", "-c:a", "copy",
         "-movflags", "+faststart", output], "ffmpeg (join)")
    want, got = stream_info(src), stream_info(output)
    report = {"source": want, "output": got, "segments": n}
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    print("video: source %d frames %.3f s, output %d frames %.3f s"
          % (want["frames"], want["duration"], got["frames"],
             got["duration"]), flush=True)
    if got["frames"] != want["frames"]:
        fail("the output has %d frames, the source %d: a segment boundary "
             "lost or doubled frames" % (got["frames"], want["frames"]))
    if abs(got["duration"] - want["duration"]) > 0.1:
        fail("the output lasts %.3f s, the source %.3f s"
             % (got["duration"], want["duration"]))
    # the extras: an HLS ladder of two renditions, a thumbnail sheet, and
    # ffprobe's report of the output
    hls = os.path.join(out, "hls")
    os.makedirs(hls, exist_ok=True)
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", output,
         "-filter_complex",
         "[0:v]split=2[a][b];[a]scale=-2:360[v360];[b]scale=-2:180[v180]",
         "-map", "[v360]", "-map", "[v180]", "-map", "0:a:0?", "-map",
         "0:a:0?", "-c:v", "libx264", "-preset", "veryfast",
         "-b:v:0", "800k", "-b:v:1", "250k", "-g", "50", "-sc_threshold",
         "0", "-c:a", "aac", "-b:a", "96k", "-f", "hls", "-hls_time", "4",
         "-hls_playlist_type", "vod", "-hls_segment_filename",
         os.path.join(hls, "r%v_%03d.ts"), "-master_pl_name",
         "master.m3u8", "-var_stream_map",
         "v:0,a:0 v:1,a:1" if got["audio"] else "v:0 v:1",
         os.path.join(hls, "r%v.m3u8")], "ffmpeg (HLS)")
    run(["ffmpeg", "-hide_banner", "-nostats", "-y", "-i", output, "-vf",
         "fps=1/2,scale=160:-2,tile=3x2", "-frames:v", "1",
         os.path.join(out, "thumbnails.png")], "ffmpeg (thumbnails)")
    with open(os.path.join(out, "probe.json"), "w") as f:
        f.write(run(["ffprobe", "-v", "error", "-of", "json", "-show_format",
                     "-show_streams", output], "ffprobe"))


def main():
    step = {"source": source, "segment": segment, "join": join}
    if len(sys.argv) != 2 or sys.argv[1] not in step:
        fail("usage: video.py source | segment | join")
    steps.scratch()
    step[sys.argv[1]]()


if __name__ == "__main__":
    main()
