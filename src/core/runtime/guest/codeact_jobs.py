"""CodeAct local guest: background jobs of a session (docs/design/backgroundJobs.md).

A job is a fork of the session taken when it starts: it sees every variable, import and open file;
what it assigns stays in the fork; its value comes back as a run's does. It is a child subreaper
that dies with the guest, and its fds 1 and 2 are one pipe of its own that a thread of the session
reads (stdout and stderr interleaved as printed, kept up to a cap, head and tail, with a note on
what was cut). Stop and the job's time limit freeze and kill its whole process tree.

Frames to the host (see codeact_guest.py):
  {"t":"job","job":int,"state":"running","run":int,"pid":int}   (pid: in the guest's own namespace)
  {"t":"job","job":int,"state":"done"|"failed"|"stopped"|"timed_out","seconds":float,
   "value":str|null (its JSON, cut),"error":{"type","message"}|null,"tail":str,"bytes":int,"cut":bool}
  {"t":"job_output","job":int,"data":str,"skipped":int}   (its output as printed, see _Live; `skipped`: bytes
   left out just before `data`)

The model's API in the session (no import): jobs(), wait_job(n, timeout=60), job_output(n), stop_job(n).
"""
import os
import sys
import threading
import time

import codeact_jobtools as jobtools
import codeact_lib as lib
import codeact_output as output
import codeact_proc as proc

lib.own_builtins(globals())  # the guest's own builtins, bound at import (codeact_values)

ENDED = ("done", "failed", "stopped", "timed_out")
# Ended jobs whose output and result the session keeps (the oldest go first).
_KEEP_ENDED = 32
_TAIL_CHARS = 1500
_VALUE_CHARS = 2000
# Live output (_Live): a job's first _LIVE_HEAD bytes go to the host whole; past them at most _LIVE_TAIL bytes
# of each interval of _LIVE_EVERY seconds (the rest is counted as skipped). So one job sends the host at most
# about 40 KiB a second however much it prints, and never more than one frame an interval after its head.
_LIVE_HEAD = 256 * 1024
_LIVE_TAIL = 4096
_LIVE_EVERY = 0.1


class _Kept:
    """A job's output: its first and last `cap // 2` bytes, and how many in between were dropped."""

    def __init__(self, cap):
        self.half = max(1024, cap // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk):
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.half:
                del self.tail[:len(self.tail) - self.half]

    @property
    def cut(self):
        return self.total - len(self.head) - min(len(self.tail), self.half)

    def text(self):
        tail = bytes(self.tail[-self.half:]) if self.tail else b""
        head = bytes(self.head).decode("utf-8", "backslashreplace")
        cut = self.cut
        if cut <= 0:
            return head + tail.decode("utf-8", "backslashreplace")
        return (head + f"\n[codeact: {cut:,} bytes of this job's output were cut here; its first and last "
                f"{self.half:,} bytes are kept]\n" + tail.decode("utf-8", "backslashreplace"))


class _Live:
    """A job's output on its way to the host as `job_output` frames: whole up to _LIVE_HEAD bytes, then sampled."""

    def __init__(self, chan, number):
        import codecs
        self.chan = chan
        self.number = number
        self.sent = 0  # bytes of the head sent or pending
        self.head = bytearray()  # pending bytes of the head
        self.tail = bytearray()  # pending bytes past the head (at most _LIVE_TAIL kept)
        self.skipped = 0  # bytes past the head dropped since the last frame
        self.last = 0.0
        self.decoder = codecs.getincrementaldecoder("utf-8")("backslashreplace")

    @property
    def pending(self):
        return bool(self.head or self.tail or self.skipped)

    def add(self, chunk):
        room = _LIVE_HEAD - self.sent
        if room > 0:
            self.head += chunk[:room]
            self.sent += min(room, len(chunk))
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > _LIVE_TAIL:
                self.skipped += len(self.tail) - _LIVE_TAIL
                del self.tail[:len(self.tail) - _LIVE_TAIL]

    def due(self):
        """Seconds until the next frame may go (0: now); None when nothing waits."""
        if not self.pending:
            return None
        return max(0.0, self.last + _LIVE_EVERY - time.monotonic())

    def flush(self):
        if self.head:
            self._send(bytes(self.head), 0)
            self.head.clear()
        if self.tail or self.skipped:
            if self.skipped:
                self.decoder.reset()  # the bytes before this piece are gone: a character cut in two is dropped
            self._send(bytes(self.tail), self.skipped)
            self.tail.clear()
            self.skipped = 0
        self.last = time.monotonic()

    def _send(self, data, skipped):
        text = self.decoder.decode(data)
        if not text and not skipped:
            return
        try:
            self.chan.send({"t": "job_output", "job": self.number, "data": text, "skipped": skipped})
        except Exception:
            pass


class Job:
    def __init__(self, number, pid, code, out_r, res_r, cap):
        self.number = number
        self.pid = pid
        self.first_line = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")[:120]
        self.out_r = out_r
        self.res_r = res_r
        self.started = time.monotonic()
        self.ended = None
        self.output = _Kept(cap)
        self.live = None  # its _Live, set by Jobs.start
        self.state = "running"
        self.reason = None  # "stopped" | "timed_out": why the host or the model killed it
        self.result = None
        self.done = threading.Event()
        self.relay = None  # its tool calls (codeact_jobtools.Relay)

    @property
    def seconds(self):
        return round((self.ended or time.monotonic()) - self.started, 3)

    def info(self):
        out = {"job": self.number, "status": self.state, "seconds": self.seconds, "code": self.first_line}
        if self.state in ENDED and self.result is not None:
            if self.result.get("ok"):
                out["value"] = self.result.get("value")
            elif self.result.get("error"):
                err = self.result["error"]
                out["error"] = f"{err.get('type', 'Error')}: {err.get('message', '')}"
        if self.output.cut > 0:
            out["output_cut"] = True
        return out


class Jobs:
    def __init__(self, chan, config, max_output, max_value):
        config = config if isinstance(config, dict) else {}
        self.chan = chan
        self.max_running = int(config.get("max") or 0)
        self.max_seconds = float(config.get("max_seconds") or 3600)
        self.max_output = max_output
        self.max_value = max_value
        self.table = {}
        self.count = 0
        self.lock = threading.Lock()
        self.session_pid = os.getpid()
        self.waker = jobtools.Waker()  # wakes wait_job when a job ends (codeact_jobtools.wait_routing)

    def skip_to(self, floor):
        """Numbers the host took (runs sent to the background): the next fork skips them."""
        if isinstance(floor, int) and not isinstance(floor, bool) and floor > self.count:
            self.count = floor

    def pids(self):
        return {j.pid for j in self.table.values() if j.state == "running"}

    def running(self):
        return sum(1 for j in self.table.values() if j.state == "running")

    def refusal(self, persistent):
        """Why a job cannot start now, or None."""
        if not persistent:
            return ("Background jobs need a session: this execution runs in a guest that ends with it. Run it without "
                    "background, or use codeact.session.policy \"conversation\".")
        if self.max_running <= 0:
            return "Background jobs are turned off (codeact.jobs.maxPerSession is 0). Run the code without background."
        if self.running() >= self.max_running:
            ids = ", ".join(str(j.number) for j in self.table.values() if j.state == "running")
            return (f"This session already runs {self.running()} background jobs (jobs {ids}); the limit is {self.max_running} "
                    "(codeact.jobs.maxPerSession). Wait for one with wait_job(n, timeout=...) or stop one with stop_job(n), then start again.")
        return None

    def start(self, guest, compiled, filename, run_id, code):
        """Forks the job; returns the run's result (the handle) at once."""
        import signal
        out_r, out_w = os.pipe()
        res_r, res_w = os.pipe()
        tools_r, tools_w = jobtools.open_pair()
        self.count += 1
        number = self.count
        out = output.OUTPUT
        # What the foreground printed is flushed first, so the fork does not print it again; the flusher
        # thread is held off meanwhile (a fork must not copy its buffer's lock taken).
        try:
            with (out.gate if out is not None else threading.Lock()):
                lib.flush_std()
                output.flush_output()
                pid = os.fork()
        except BaseException:  # no fork (the process limit): the run says why, and no pipe is left open
            for fd in (out_r, out_w, res_r, res_w, tools_r, tools_w):
                os.close(fd)
            raise
        if pid == 0:
            os.close(out_r)
            os.close(res_r)
            os.close(tools_r)
            self._child(guest, compiled, filename, out_w, res_w, signal, (number, tools_w))
        os.close(out_w)
        os.close(res_w)
        os.close(tools_w)
        job = Job(number, pid, code, out_r, res_r, self.max_output)
        job.live = _Live(self.chan, number)
        job.relay = jobtools.Relay(self.chan, number, tools_r, guest.bridge.max_concurrency, guest.bridge.max_frame)
        with self.lock:
            self.table[number] = job
        self.chan.send({"t": "job", "job": number, "state": "running", "run": run_id, "pid": pid})
        threading.Thread(target=self._watch, args=(job,), name=f"codeact-job-{number}", daemon=True).start()
        return {"ok": True, "value": lib.compact_json({"job": number, "status": "running"})}

    def _child(self, guest, compiled, filename, out_w, res_w, signal, tools):
        me = os.getpid()
        result = None
        try:
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            os.close(out_w)
            try:
                os.close(guest.chan.fd)  # a job never speaks on the session's channel
            except OSError:
                pass
            guest.checkpoints.forget_in_child()  # nor holds the session's checkpoints open
            signal.signal(signal.SIGINT, signal.default_int_handler)
            jobtools.in_child(guest, tools[0], tools[1], [j.relay.fd for j in self.table.values() if j.relay is not None])
            proc.set_subreaper(True)  # its orphans come back to it; it dies with the guest
            if output.OUTPUT is not None:
                output.OUTPUT.after_fork()
            fn = lib.exec_cell(compiled, guest.namespace)
            interrupt = lib.Interrupt()
            with lib.no_input():
                if compiled.is_async:
                    import asyncio
                    loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(loop)
                    value = lib.run_in_loop(fn, loop, interrupt)
                else:
                    value = lib.run_sync(fn, interrupt)
            kind, payload = lib.encode_value(value, compiled.implicit, self.max_value)
            if kind == "ok":
                result = '{"ok":true,"value":%s}' % payload
            elif kind == "display":
                result = lib.compact_json({"ok": True, "value": None, "shown": _short_repr(payload)})
            else:
                result = lib.compact_json({"ok": False, "error": payload})
        except BaseException as exc:
            if os.getpid() == me:
                if isinstance(exc, SystemExit) and lib.exit_result(exc):
                    result = '{"ok":true,"value":null}'
                else:
                    result = lib.compact_json({"ok": False, "error": lib.format_error(exc, filename)})
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
                output.flush_output()
            except BaseException:
                pass
            if os.getpid() == me:
                if result is not None:
                    _write_all(res_w, result.encode("utf-8", "surrogatepass"))
                # A job ends with everything it started, as a one-shot run does.
                proc.kill_descendants()
            os._exit(0)

    def _watch(self, job):
        """Reads the job's output and result until both close, then reaps it; kills it at its time limit."""
        import select
        fds = [job.out_r, job.res_r]
        raw = bytearray()
        deadline = job.started + self.max_seconds
        while fds:
            left = deadline - time.monotonic()
            if left <= 0 and job.reason is None:
                job.reason = "timed_out"
                self._kill(job)
                left = 1.0
            due = job.live.due()
            if due == 0:
                job.live.flush()
                due = None
            try:
                ready, _, _ = select.select(fds + self._tool_fds(job), [], [], max(0.05, left) if due is None else min(max(0.05, left), max(0.01, due)))
            except InterruptedError:
                continue
            for fd in ready:
                if job.relay is not None and fd == job.relay.fd:
                    self._on_tools(job)
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except InterruptedError:
                    continue
                if not chunk:
                    fds.remove(fd)
                    os.close(fd)
                elif fd == job.out_r:
                    job.output.add(chunk)
                    job.live.add(chunk)
                elif len(raw) <= self.max_value + 65536:
                    raw += chunk
        try:
            _, status = os.waitpid(job.pid, 0)
        except ChildProcessError:
            status = None
        job.ended = time.monotonic()
        self._close_tools(job)
        try:
            job.result = lib.loads(raw.decode("utf-8", "surrogatepass")) if raw else None
        except Exception:
            job.result = None
        if job.reason is not None:
            job.state = job.reason
        elif job.result is None:
            job.state = "failed"
            job.result = {"ok": False, "error": {"type": "JobCrashed", "message": _exit_text(status)}}
        else:
            job.state = "done" if job.result.get("ok") else "failed"
        # The host hears of the end before wait_job returns it: a run that waited for a job completes after
        # the job's frame, so the model's next step is told of it. Its last output goes first.
        job.live.flush()
        self._send_end(job)
        job.done.set()
        self.waker.wake()
        with self.lock:
            ended = [n for n, j in self.table.items() if j.state in ENDED]
            for n in ended[:-_KEEP_ENDED]:
                del self.table[n]

    def _send_end(self, job):
        frame = {"t": "job", "job": job.number, "state": job.state, "seconds": job.seconds, "value": None, "error": None,
                 "tail": job.output.text()[-_TAIL_CHARS:], "bytes": job.output.total, "cut": job.output.cut > 0}
        r = job.result or {}
        if r.get("ok") and (r.get("value") is not None or r.get("shown")):
            frame["value"] = (lib.compact_json(r["value"]) if r.get("value") is not None else r["shown"])[:_VALUE_CHARS]
        elif r.get("error"):
            frame["error"] = {"type": str(r["error"].get("type", "Error"))[:100], "message": str(r["error"].get("message", ""))[:_VALUE_CHARS]}
        try:
            self.chan.send(frame)
        except Exception:
            pass

    def _tool_fds(self, job):
        relay = job.relay
        return [relay.fd] if relay is not None and not relay.closed and not relay.eof else []

    def _on_tools(self, job):
        """The job wrote on its tool channel (codeact_jobtools): its calls go to the host."""
        try:
            if not job.relay.on_readable():
                job.relay.eof = True
        except jobtools.JobProtocolError as exc:
            job.relay.eof = True
            job.output.add(f"\n[codeact: background job {job.number} was killed: it wrote {exc}]\n".encode())
            self._kill(job)

    def _close_tools(self, job):
        if job.relay is not None:
            job.relay.close()

    def reply(self, frame):
        """A host frame for a job (from the session's main thread): a tool call's answer goes to its job."""
        job = self.table.get(frame.get("job")) if frame.get("t") == "tool_result" else None
        if job is not None and job.state == "running" and job.relay is not None:
            job.relay.reply(frame)

    def _kill(self, job):
        proc.kill_descendants(only=job.pid)

    def stop(self, number, reason="stopped", wait=10.0):
        job = self._get(number)
        if job.state == "running":
            if job.reason is None:
                job.reason = reason
            self._kill(job)
            job.done.wait(wait)
        return job.info()

    def install(self, namespace, hidden, own_file):
        for f in (__file__, jobtools.__file__):
            own_file(f)
            own_file(os.path.abspath(f))
        jobs = self

        def jobs_list():
            """Your background jobs: [{"job", "status", "seconds", "code"...}] (status: running, done, failed, stopped, timed_out)."""
            return [j.info() for j in list(jobs.table.values())]

        def wait_job(job, timeout=60):
            """Waits up to `timeout` seconds for background job `job`; returns its status (and value or error when it ended)."""
            j = jobs._get(job)
            if os.getpid() == jobs.session_pid:  # the host's answers to the jobs' tool calls are routed meanwhile
                jobtools.wait_routing(jobs.chan, jobs, j.done, float(timeout), jobs.waker)
            else:
                j.done.wait(max(0.0, float(timeout)))
            return j.info()

        def job_output(job):
            """The output of background job `job` so far: stdout and stderr as printed (a note says what was cut)."""
            return jobs._get(job).output.text()

        def stop_job(job):
            """Stops background job `job` and every process it started; returns its status."""
            return jobs.stop(job)

        names = {"jobs": jobs_list, "wait_job": wait_job, "job_output": job_output, "stop_job": stop_job}
        namespace.update(names)
        hidden.update(names)

    def _get(self, number):
        job = self.table.get(number) if isinstance(number, int) else None
        if job is None:
            known = ", ".join(str(n) for n in self.table) or "none yet"
            gone = isinstance(number, int) and 0 < number <= self.count
            raise LookupError(f"There is no background job {number!r} in this session (its jobs: {known})" +
                              (f"; only the last {_KEEP_ENDED} ended jobs are kept." if gone else "."))
        return job


def _short_repr(value):
    try:
        return repr(value)[:_VALUE_CHARS]
    except Exception as exc:
        return f"<{type(value).__name__}: repr failed ({exc})>"


def _exit_text(status):
    if status is None:
        return "the job's process could not be reaped"
    if os.WIFSIGNALED(status):
        return f"the job's process was killed by signal {os.WTERMSIG(status)} before it returned a result (out of memory?)"
    return f"the job's process exited with code {os.WEXITSTATUS(status)} before it returned a result"


def _write_all(fd, data):
    try:
        jobtools.write_all(fd, data)
    except OSError:  # nobody reads the result any more
        return
