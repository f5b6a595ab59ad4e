"""CodeAct local guest: the frames of rich outputs (the protocol is in codeact_guest.py's docstring).

- displays: codeact_display formats and caps them; each one sent here goes out in order with the
  output: the user's stdout and stderr flushed, the marker written straight to fd 1 and fd 2, then its
  "display" frame (never from a forked child; from another thread, one frame at a time);
- files: the working directory is listed before each run and after it; each new or changed file goes
  out as a "file" frame (its data while it fits the caps) before the "complete" frame.
"""
import sys

import codeact_display as display
import codeact_files as files
import codeact_lib as lib
import codeact_output as output

lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)


class RichOutputs:
    def __init__(self, chan, root, max_frame, is_main):
        self.chan = chan
        self.root = root
        self.max_frame = max_frame
        self.is_main = is_main
        self.run_id = None
        self.end_token = None
        self.seq = 0
        self.before = {}
        self.file_caps = files.caps(None)
        # The channel carries a display's data, metadata (at most 64 KiB) and summary (20,000 characters).
        display.configure(self.send_display, note, print_text, frame_limit=max(1024, max_frame - (160 << 10)))

    def begin(self, run_id, frame):
        """A run starts: its caps, its end token (the markers carry it), the listing of the folder."""
        self.run_id, self.end_token, self.seq = run_id, frame.get("end"), 0
        display.begin_run(frame.get("display"))
        self.file_caps = files.caps(frame.get("files"))
        try:
            self.before = files.snapshot(self.root)
        except Exception:
            self.before = {}

    def finish(self, value, interrupt):
        """The last expression, the figures left open, the note on the caps (codeact_display.finish_run),
        with Stop still working while a slow figure renders."""
        try:
            lib.run_sync(lambda: display.finish_run(value), interrupt)
        except BaseException:  # a SIGINT just after it finished: nothing left to stop
            display.STATE.active = False

    def send_display(self, data, metadata, data_json, meta_json, extra):
        """A display, in order with the output: the run's marker on stdout and stderr, then its frame.
        A forked child never sends one (its text goes to stdout instead)."""
        if self.run_id is None or not self.is_main():
            return False
        import signal
        # SIGINT waits until the marker and the frame are both out (never a marker without its frame).
        masked = _block_sigint(signal)
        try:
            with self.chan.lock:
                self.seq += 1
                marks = output.write_display_marker(self.end_token, self.seq)
                text = '{"t":"display","run":%d,"seq":%d,"marks":[%s,%s],"data":%s,"metadata":%s' % (
                    self.run_id, self.seq, "true" if marks[0] else "false", "true" if marks[1] else "false", data_json, meta_json)
                for key in ("result", "display_id", "update", "summary"):
                    if key in extra:
                        text += ',"%s":%s' % (key, lib.compact_json(extra[key]))
                self.chan._write((text + "}\n").encode("utf-8", "surrogatepass"))
        finally:
            if masked:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        return True

    def send_files(self):
        """A "file" frame for each file the run made or changed in the working directory (up to the caps);
        returns how many were sent. The run is over for displays after this."""
        run_id, self.run_id = self.run_id, None
        sent = [0]
        try:
            self._send_files(run_id, sent)
        except Exception as exc:  # never loses the run's result
            note(f"[codeact: the files of this execution could not all be listed ({type(exc).__name__}: {exc})]\n")
        return sent[0]

    def _send_files(self, run_id, sent):
        import binascii
        before, caps = self.before, self.file_caps
        paths = files.changed(before, files.snapshot(self.root))
        room = (self.max_frame - 8192) * 3 // 4
        total = 0
        for rel in paths[:caps["max_count"]]:
            if len(rel) > 4096:
                continue
            limit = min(caps["max_bytes"], room)
            got = files.read_file(self.root, rel, limit)
            if got is None:
                continue
            size, data, why = got
            why_not = None
            if why == "too large":
                why_not = f"too large to copy out: {display.size_text(size)}; the limit is {display.size_text(limit)}"
            elif why == "changing":
                why_not = "not copied out: it was still being written"
            elif total + size > caps["max_total"]:
                data = None
                why_not = f"not copied out: the files of this execution passed {display.size_text(caps['max_total'])} in all"
            else:
                total += size
            frame = {"t": "file", "run": run_id, "path": rel, "size": size,
                     "data": binascii.b2a_base64(data, newline=False).decode("ascii") if data is not None else None}
            if why_not:
                frame["note"] = why_not
            self.chan.send(frame)
            sent[0] += 1
        more = len(paths) - caps["max_count"]
        if more > 0:
            note(f"[codeact: {more:,} more changed file{'s were' if more != 1 else ' was'} not listed; the cap is {caps['max_count']:,} per execution]\n")


def _block_sigint(signal):
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
        return True
    except (AttributeError, OSError, ValueError):
        return False


def note(text):
    """A note of ours on the run's stderr (not the code's sys.stderr, which it may have replaced)."""
    lib.flush_std()
    stream = output.OUTPUT.stderr if output.OUTPUT is not None else sys.__stderr__
    try:
        stream.write(text)
        stream.flush()
    except Exception:
        pass


def print_text(text):
    """A display that cannot be sent (a forked child's): its text on stdout."""
    stream = output.OUTPUT.stdout if output.OUTPUT is not None else sys.__stdout__
    try:
        stream.write(text + "\n")
        stream.flush()
    except Exception:
        pass
