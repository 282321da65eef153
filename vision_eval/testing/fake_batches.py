"""The batch endpoints of the fake providers: OpenAI Batch (files + ``/v1/batches``), Anthropic Message Batches
and Gemini batch mode, on the same server as the live endpoints (:class:`FakeProviders` creates one
:class:`FakeBatches` as ``fake.batches``).

A job runs for ``job_seconds`` (its status moves through the provider's own words: validating / in_progress /
finalizing / completed for OpenAI, in_progress / ended for Anthropic, PENDING / RUNNING / SUCCEEDED for Gemini),
unless ``hold`` keeps every job running until :meth:`FakeBatches.release`. When it ends, each of its requests
is answered exactly as the live endpoint would answer it (scripted actions in order, the images decoded, the
pixel-grounded verdict), and the answers land in the provider's result format; a scripted error status becomes
that request's error. ``expire_next`` makes the next jobs expire after answering only their first
``expire_after`` requests. ``stall_polls`` makes the next status checks go unanswered for ``stall_s`` seconds or
until :meth:`FakeBatches.release` (a request lost on the way; ``stalled`` counts them). ``created``, ``polls``,
``uploads`` and ``cancels`` count what arrived.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"}  # fmt: skip
GEMINI_CODES = {400: (3, "INVALID_ARGUMENT"), 401: (16, "UNAUTHENTICATED"), 403: (7, "PERMISSION_DENIED"),
                404: (5, "NOT_FOUND"), 429: (8, "RESOURCE_EXHAUSTED"), 503: (14, "UNAVAILABLE")}  # fmt: skip


@dataclass
class FakeJob:
    """One batch job held by the fake."""

    id: str
    provider: str
    model: str
    requests: list[tuple[str, dict[str, Any]]]
    """(key or custom_id, request body in the provider's shape)."""
    created: float
    input_file_id: str | None = None
    state: str = "running"
    """``running``, ``completed``, ``expired`` or ``cancelled``."""
    cancel_requested: bool = False
    expire_after: int | None = None
    answers: list[tuple[str, int, dict[str, Any] | None]] = field(default_factory=list)
    """(key, HTTP status, body) per answered request, in order."""
    files: tuple[str | None, str | None] | None = None
    """OpenAI: the output and error file ids, once written."""


def _iso(stamp: float | None) -> str | None:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if stamp else None


class FakeBatches:
    """Batch jobs of the fake providers (see the module docstring)."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self.job_seconds = 0.3
        self.hold = False
        self.expire_next = 0
        self.expire_after = 0
        self.stall_polls = 0
        self.stall_s = 30.0
        self.stalled = 0
        self._released = threading.Event()
        self.jobs: dict[str, FakeJob] = {}
        self.files: dict[str, bytes] = {}
        self.created: dict[str, int] = {}
        self.polls = self.uploads = self.cancels = 0
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    def reset(self) -> None:
        """Forget every job, file and count; back to the default timing."""
        with self._lock:
            self.__init__(self.fake)  # type: ignore[misc]

    def release(self) -> None:
        """Let held jobs finish (at their next status check), and answer stalled status checks now."""
        self.hold = False
        self._released.set()

    @property
    def total_created(self) -> int:
        return sum(self.created.values())

    # lifecycle -------------------------------------------------------------------------------------------
    def _new_job(self, provider: str, model: str, requests: list[tuple[str, dict[str, Any]]], **extra: Any) -> FakeJob:
        with self._lock:
            prefix = {"openai": "batch_", "anthropic": "msgbatch_", "gemini": "batches/"}[provider]
            job = FakeJob(f"{prefix}{next(self._ids):04d}", provider, model, requests, time.time(), **extra)
            if self.expire_next > 0:
                self.expire_next -= 1
                job.expire_after = self.expire_after
            self.jobs[job.id] = job
            self.created[provider] = self.created.get(provider, 0) + 1
        return job

    def _advance(self, job: FakeJob) -> None:
        """End a job whose time has come (or that was cancelled), answering its requests."""
        with self._lock:
            if job.state != "running":
                return
            if job.cancel_requested:
                job.state = "cancelled"
                return
            if self.hold or time.time() < job.created + self.job_seconds:
                return
            count = len(job.requests) if job.expire_after is None else min(job.expire_after, len(job.requests))
            for key, body in job.requests[:count]:
                status, payload, _ = self.fake.respond(job.provider, job.model, body, {}, self.fake.next_action())
                job.answers.append((key, status, payload))
            job.state = "completed" if job.expire_after is None else "expired"

    async def _stall(self) -> None:
        with self._lock:
            stall, self.stall_polls = self.stall_polls > 0, max(0, self.stall_polls - 1)
            self.stalled += stall
        deadline = time.monotonic() + self.stall_s
        while stall and not self._released.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    def _job(self, job_id: str) -> FakeJob | None:
        with self._lock:
            self.polls += 1
            job = self.jobs.get(job_id)
        if job is not None:
            self._advance(job)
        return job

    def _phase(self, job: FakeJob) -> str:
        """Where a running job is in its time (for the providers that report more than one running state)."""
        elapsed = time.time() - job.created
        return "early" if elapsed < self.job_seconds * 0.2 else "late"

    # routes --------------------------------------------------------------------------------------------
    def add_routes(self, app: Any) -> None:
        """Register the batch endpoints (before the live ones: Gemini's paths overlap)."""
        r = app.router
        r.add_post("/v1/files", self._openai_upload)
        r.add_get("/v1/files/{file_id}", self._openai_file)
        r.add_get("/v1/files/{file_id}/content", self._openai_content)
        r.add_post("/v1/batches", self._openai_create)
        r.add_get("/v1/batches/{job_id}", self._openai_get)
        r.add_post("/v1/batches/{job_id}/cancel", self._openai_cancel)
        r.add_post("/v1/messages/batches", self._anthropic_create)
        r.add_get("/v1/messages/batches/{job_id}", self._anthropic_get)
        r.add_get("/v1/messages/batches/{job_id}/results", self._anthropic_results)
        r.add_post("/v1/messages/batches/{job_id}/cancel", self._anthropic_cancel)
        r.add_post("/v1beta/models/{model}:batchGenerateContent", self._gemini_create)
        r.add_get("/v1beta/batches/{job_id}", self._gemini_get)
        r.add_post("/v1beta/batches/{job_id}:cancel", self._gemini_cancel)

    @staticmethod
    def _missing(what: str) -> Any:
        from aiohttp import web

        return web.json_response({"error": {"message": f"no such {what}", "type": "not_found_error"}}, status=404)

    def _cancel(self, job_id: str, render: Any) -> Any:
        """A cancel request: the job stops at its next step; the reply is ``render(job)``."""
        from aiohttp import web

        job = self.jobs.get(job_id)
        if job is None:
            return self._missing("batch")
        with self._lock:
            self.cancels += 1
            job.cancel_requested = job.state == "running"
        return web.json_response(render(job))

    # OpenAI --------------------------------------------------------------------------------------------
    def _file_object(self, file_id: str) -> dict[str, Any]:
        return {"id": file_id, "object": "file", "bytes": len(self.files[file_id]), "created_at": int(time.time()),
                "filename": f"{file_id}.jsonl", "purpose": "batch", "status": "processed"}  # fmt: skip

    def _add_file(self, data: bytes) -> str:
        with self._lock:
            file_id = f"file-{next(self._ids):04d}"
            self.files[file_id] = data
        return file_id

    async def _openai_upload(self, request: Any) -> Any:
        from aiohttp import web

        form = await request.post()
        upload = form.get("file")
        data = upload.file.read() if hasattr(upload, "file") else bytes(str(upload), "utf-8")
        with self._lock:
            self.uploads += 1
        return web.json_response(self._file_object(self._add_file(data)))

    async def _openai_file(self, request: Any) -> Any:
        from aiohttp import web

        file_id = request.match_info["file_id"]
        return web.json_response(self._file_object(file_id)) if file_id in self.files else self._missing("file")

    async def _openai_content(self, request: Any) -> Any:
        from aiohttp import web

        data = self.files.get(request.match_info["file_id"])
        return web.Response(body=data, content_type="application/octet-stream") if data is not None else (
            self._missing("file"))  # fmt: skip

    async def _openai_create(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            return self._missing("input file")
        lines = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        model = lines[0]["body"]["model"] if lines else ""
        requests = [(line["custom_id"], line["body"]) for line in lines]
        job = self._new_job("openai", model, requests, input_file_id=body["input_file_id"])
        return web.json_response(self._openai_object(job))

    def _openai_object(self, job: FakeJob) -> dict[str, Any]:
        status = {"completed": "completed", "expired": "expired", "cancelled": "cancelled"}.get(job.state)
        if status is None:
            status = "cancelling" if job.cancel_requested else (
                "validating" if self._phase(job) == "early" else "in_progress")  # fmt: skip
        ok = [a for a in job.answers if a[1] == 200]
        failed = len(job.answers) - len(ok) + (len(job.requests) - len(job.answers) if job.state != "running" else 0)
        out = {"id": job.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
               "input_file_id": job.input_file_id, "completion_window": "24h", "status": status,
               "output_file_id": None, "error_file_id": None, "created_at": int(job.created),
               "request_counts": {"total": len(job.requests), "completed": len(ok), "failed": failed},
               "metadata": {}}  # fmt: skip
        if job.state != "running":
            out["output_file_id"], out["error_file_id"] = self._openai_files(job)
        return out

    def _openai_files(self, job: FakeJob) -> tuple[str | None, str | None]:
        with self._lock:
            if job.files is None:
                good: list[dict[str, Any]] = []
                bad: list[dict[str, Any]] = []
                for n, (key, status, payload) in enumerate(job.answers):
                    line = {"id": f"batch_req_{n}", "custom_id": key, "error": None,
                            "response": {"status_code": status, "request_id": f"req_{n}", "body": payload}}  # fmt: skip
                    (good if status == 200 else bad).append(line)
                code = "batch_expired" if job.state == "expired" else "batch_cancelled"
                for key, _ in job.requests[len(job.answers) :]:
                    message = f"This request was not executed: the batch was {job.state}."
                    bad.append({"custom_id": key, "response": None, "error": {"code": code, "message": message}})
                text = [b"".join(json.dumps(x).encode() + b"\n" for x in lines) for lines in (good, bad)]
                job.files = (self._add_file(text[0]) if text[0] else None, self._add_file(text[1]) if text[1] else None)
            return job.files

    async def _openai_get(self, request: Any) -> Any:
        from aiohttp import web

        await self._stall()
        job = self._job(request.match_info["job_id"])
        return web.json_response(self._openai_object(job)) if job is not None else self._missing("batch")

    async def _openai_cancel(self, request: Any) -> Any:
        return self._cancel(request.match_info["job_id"], self._openai_object)

    # Anthropic -----------------------------------------------------------------------------------------
    async def _anthropic_create(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        requests = [(item["custom_id"], item["params"]) for item in body.get("requests", [])]
        model = requests[0][1].get("model", "") if requests else ""
        return web.json_response(self._anthropic_object(self._new_job("anthropic", model, requests)))

    def _anthropic_object(self, job: FakeJob) -> dict[str, Any]:
        ended = job.state != "running"
        counts = {"processing": 0 if ended else len(job.requests), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}  # fmt: skip
        for _, status, _ in job.answers:
            counts["succeeded" if status == 200 else "errored"] += 1
        if ended:
            counts["expired" if job.state == "expired" else "canceled"] += len(job.requests) - len(job.answers)
        base = f"{self.fake.base}/v1/messages/batches/{job.id}"
        return {"id": job.id, "type": "message_batch", "request_counts": counts,
                "processing_status": "ended" if ended else ("canceling" if job.cancel_requested else "in_progress"),
                "created_at": _iso(job.created), "expires_at": _iso(job.created + 86400),
                "ended_at": _iso(time.time()) if ended else None, "archived_at": None,
                "cancel_initiated_at": _iso(job.created) if job.cancel_requested else None,
                "results_url": f"{base}/results" if ended else None}  # fmt: skip

    async def _anthropic_get(self, request: Any) -> Any:
        from aiohttp import web

        await self._stall()
        job = self._job(request.match_info["job_id"])
        return web.json_response(self._anthropic_object(job)) if job is not None else self._missing("batch")

    async def _anthropic_results(self, request: Any) -> Any:
        from aiohttp import web

        job = self.jobs.get(request.match_info["job_id"])
        if job is None or job.state == "running":
            return self._missing("results (the batch has not ended)")
        lines = []
        for key, status, payload in job.answers:
            if status == 200:
                result: dict[str, Any] = {"type": "succeeded", "message": payload}
            else:
                message = ((payload or {}).get("error") or {}).get("message", f"HTTP {status}")
                kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
                result = {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": message}}}
            lines.append({"custom_id": key, "result": result})
        left = "expired" if job.state == "expired" else "canceled"
        lines += [{"custom_id": key, "result": {"type": left}} for key, _ in job.requests[len(job.answers) :]]
        text = "".join(json.dumps(line) + "\n" for line in lines)
        return web.Response(text=text, content_type="application/binary")

    async def _anthropic_cancel(self, request: Any) -> Any:
        return self._cancel(request.match_info["job_id"], self._anthropic_object)

    # Gemini --------------------------------------------------------------------------------------------
    async def _gemini_create(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        batch = body.get("batch") or {}
        config = batch.get("input_config") or batch.get("inputConfig") or {}
        items = (config.get("requests") or {}).get("requests") or []
        requests = [((item.get("metadata") or {}).get("key", str(n)), item["request"]) for n, item in enumerate(items)]
        job = self._new_job("gemini", request.match_info["model"], requests)
        return web.json_response(self._gemini_object(job))

    def _gemini_object(self, job: FakeJob) -> dict[str, Any]:
        state = {"completed": "SUCCEEDED", "expired": "EXPIRED", "cancelled": "CANCELLED"}.get(job.state)
        if state is None:
            state = "PENDING" if self._phase(job) == "early" else "RUNNING"
        out: dict[str, Any] = {"name": job.id, "metadata": {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
            "model": f"models/{job.model}", "state": f"BATCH_STATE_{state}",
            "batchStats": {"requestCount": str(len(job.requests))}}}  # fmt: skip
        if job.state == "running":
            return out
        items = []
        for key, status, payload in job.answers:
            if status == 200:
                items.append({"response": payload, "metadata": {"key": key}})
            else:
                code, name = GEMINI_CODES.get(status, (13, "INTERNAL"))
                message = ((payload or {}).get("error") or {}).get("message", f"HTTP {status}")
                items.append({"error": {"code": code, "message": message, "status": name}, "metadata": {"key": key}})
        out["done"] = True
        kind = "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput"
        out["response"] = {"@type": kind, "inlinedResponses": {"inlinedResponses": items}}
        return out

    async def _gemini_get(self, request: Any) -> Any:
        from aiohttp import web

        await self._stall()
        job = self._job("batches/" + request.match_info["job_id"])
        return web.json_response(self._gemini_object(job)) if job is not None else self._missing("batch")

    async def _gemini_cancel(self, request: Any) -> Any:
        return self._cancel("batches/" + request.match_info["job_id"], lambda job: {})
