"""The estimator stays within ±10% of tiktoken's o200k_base on realistic text.

tiktoken downloads ``o200k_base.tiktoken`` on first use; tests have no network. The
``quicktok-v1`` package ships the same ranks in its own binary layout, so the fixture
rebuilds the ``.tiktoken`` file from it and puts it in a private tiktoken cache. tiktoken
checks the file against the SHA-256 it expects for o200k_base, so the reference really is
tiktoken's o200k_base.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.provider import ToolDefinition
from tether.tokens import estimate_context, estimate_request, estimate_tokens

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture(scope="module")
def o200k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    tiktoken = pytest.importorskip("tiktoken")
    quicktok = pytest.importorskip("quicktok")
    raw = (Path(quicktok.__file__).parent / "data" / "o200k.vocab").read_bytes()
    (count,) = struct.unpack_from("<I", raw, 0)
    offset, ranks = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", raw, offset)
        token = raw[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", raw, offset + 2 + length)
        offset += 6 + length
        ranks.append((rank, token))
    ranks.sort()
    cache = tmp_path_factory.mktemp("tiktoken")
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(
        "".join(f"{base64.b64encode(t).decode()} {r}\n" for r, t in ranks).encode()
    )
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        encoding = tiktoken.get_encoding("o200k_base")  # verifies the file's SHA-256
        yield encoding
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


ENGLISH = """\
When we started the migration, the plan looked simple: move the billing service off the
old cluster, keep the public API unchanged, and switch traffic over one region at a time.
In practice, almost every assumption we had about the old system turned out to be only
partly true. The retry logic, for example, was not in the client library at all; it lived
in a sidecar that nobody had touched in three years, and it silently deduplicated requests
using a header that the new gateway stripped.

The first week was spent building a replay harness. We captured a day of production
traffic, scrubbed personal data, and replayed it against both stacks, comparing responses
field by field. Most differences were harmless: timestamps formatted with a different
precision, lists returned in another order. A handful were not. Invoices for customers
with mixed currencies were rounded twice, and refunds issued within the same second as a
charge were occasionally dropped.

What made the difference in the end was not a clever tool but a habit. Every morning, the
team picked the three most surprising diffs from the previous night's replay and wrote down,
in plain language, what the old system did and why. By the end of the month we had a
document of forty pages that explained behaviour nobody had ever specified, and we could
finally decide, case by case, which quirks to keep and which to fix. The cutover itself,
when it came, took eleven minutes and was almost boring, which is exactly what you want.

A few lessons seem worth sharing. Measure before you change anything, because the numbers
you remember are usually wrong. Treat undocumented behaviour as a feature until you can
prove that no one depends on it. And give people time to read old code slowly: the most
valuable findings came from someone who spent an afternoon following a single request
through six services with a notebook open beside the terminal.
"""

CODE = '''\
import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

log = logging.getLogger(__name__)


@dataclass
class Job:
    """A unit of work read from the queue directory."""

    path: Path
    attempts: int = 0
    tags: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.stem

    def should_retry(self, max_attempts: int = 3) -> bool:
        return self.attempts < max_attempts


class Worker:
    def __init__(self, queue: Path, *, concurrency: int = 4, timeout: float = 30.0) -> None:
        self.queue = queue
        self.semaphore = asyncio.Semaphore(concurrency)
        self.timeout = timeout
        self.done: dict[str, bool] = {}

    def pending(self) -> Iterable[Job]:
        for entry in sorted(self.queue.glob("*.json")):
            if entry.name not in self.done:
                yield Job(entry)

    async def run_one(self, job: Job) -> None:
        async with self.semaphore:
            try:
                await asyncio.wait_for(self.process(job), timeout=self.timeout)
            except asyncio.TimeoutError:
                job.attempts += 1
                log.warning("job %s timed out (attempt %d)", job.name, job.attempts)
                if job.should_retry():
                    await self.run_one(job)
                    return
                self.done[job.name] = False
            except Exception as exc:  # noqa: BLE001
                log.exception("job %s failed: %s", job.name, exc)
                self.done[job.name] = False
            else:
                self.done[job.name] = True

    async def process(self, job: Job) -> None:
        data = job.path.read_text(encoding="utf-8")
        if not data.strip():
            raise ValueError(f"{job.path} is empty")
        await asyncio.sleep(0)

    async def run(self) -> dict[str, bool]:
        await asyncio.gather(*(self.run_one(job) for job in self.pending()))
        failed = [name for name, ok in self.done.items() if not ok]
        if failed:
            log.error("%d jobs failed: %s", len(failed), ", ".join(failed[:10]))
        return self.done


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Process queued jobs.")
    parser.add_argument("queue", type=Path)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    results = asyncio.run(Worker(args.queue, concurrency=args.concurrency).run())
    return 0 if all(results.values()) else 1
'''

CHINESE = """\
上个月我们把订单系统从旧的机房迁移到了云上。原本以为只是换一批服务器，结果发现很多逻辑都藏在没人维护的脚本里。
比如，每天凌晨两点会有一个定时任务重新计算优惠券的有效期，如果这个任务失败，第二天早上客服就会接到大量投诉。
为了弄清楚系统到底在做什么，团队先花了一周时间记录线上流量，然后在测试环境里完整地回放，并逐条比较新旧两套系统的返回结果。
大部分差异都无关紧要，例如时间格式的精度不同，或者列表的排列顺序不一样。但也有少数问题非常严重：多币种订单的金额被四舍五入了两次，
而在同一秒内发生的支付和退款，有时会丢失其中一条记录。我们把每一个差异都写进文档，说明旧系统的行为以及可能的原因，
再和业务部门一起决定哪些需要保留，哪些应该修正。到月底的时候，这份文档已经有四十多页，成为了新同事最常看的资料之一。
正式切换那天，整个过程只用了十一分钟，几乎没有人注意到。回头来看，最重要的经验并不是某个工具，而是耐心：
在动手修改之前先测量，在证明没有人依赖之前，把没有文档的行为当作功能来对待，并且给工程师足够的时间去慢慢阅读旧代码。
另外，我们也意识到监控的重要性。迁移之前，很多指标只记录平均值，看不出长尾请求的问题；迁移之后，我们为每个接口增加了百分位延迟、
错误率和重试次数的图表，并设置了合理的告警阈值。这样一来，任何异常都能在几分钟之内被发现，而不是等到用户来反馈。
最后，团队还整理了一份上线检查清单，包括数据库备份、回滚方案、值班安排和对外沟通的模板，以后每次发布都会按照清单逐项确认。
"""

JAPANESE = """\
先月、私たちは注文システムを古いデータセンターからクラウドへ移行しました。最初はサーバーを入れ替えるだけだと考えていましたが、
実際には誰も管理していないスクリプトの中に多くの処理が隠れていることが分かりました。たとえば、毎日午前二時に実行される定期処理が
クーポンの有効期限を再計算しており、この処理が失敗すると、翌朝にはサポート窓口に問い合わせが殺到します。
システムが実際に何をしているのかを理解するために、チームはまず一週間かけて本番環境の通信を記録し、テスト環境で再生して、
新旧のシステムの応答を一件ずつ比較しました。ほとんどの違いは問題のないもので、時刻の表記の精度や、一覧の並び順が異なる程度でした。
しかし、いくつかは深刻でした。複数の通貨を含む注文では金額が二重に丸められ、同じ秒に発生した支払いと返金の一方が記録されないことがありました。
私たちは差異をすべて文書にまとめ、旧システムの振る舞いとその理由を説明したうえで、どれを残しどれを修正するかを業務部門と一緒に決めました。
月末には、その文書は四十ページを超え、新しく加わったメンバーが最もよく読む資料の一つになりました。切り替え当日の作業はわずか十一分で終わり、
ほとんど誰も気づきませんでした。振り返ってみると、大切だったのは特別な道具ではなく、変更する前に測定すること、そして古いコードを
ゆっくり読む時間をエンジニアに与えることでした。また、監視の重要性にも気づきました。移行前は多くの指標が平均値しか記録しておらず、
遅いリクエストの問題が見えませんでした。移行後は、各エンドポイントにパーセンタイルの遅延、エラー率、再試行回数のグラフを追加し、
適切なしきい値でアラートを設定しました。
"""

KOREAN = """\
지난달 우리는 주문 시스템을 오래된 데이터센터에서 클라우드로 옮겼습니다. 처음에는 서버만 바꾸면 된다고 생각했지만,
실제로는 아무도 관리하지 않는 스크립트 안에 많은 로직이 숨어 있다는 것을 알게 되었습니다. 예를 들어 매일 새벽 두 시에 실행되는
예약 작업이 쿠폰의 유효 기간을 다시 계산하고 있었는데, 이 작업이 실패하면 다음 날 아침 고객센터에 문의가 쏟아졌습니다.
시스템이 실제로 무엇을 하는지 이해하기 위해 팀은 먼저 일주일 동안 운영 환경의 트래픽을 기록하고, 테스트 환경에서 그대로 재생한 뒤
새 시스템과 기존 시스템의 응답을 하나씩 비교했습니다. 대부분의 차이는 사소한 것이었습니다. 시간 형식의 정밀도가 다르거나 목록의 순서가
달라지는 정도였습니다. 하지만 몇 가지는 심각했습니다. 여러 통화가 섞인 주문에서는 금액이 두 번 반올림되었고, 같은 초에 일어난 결제와
환불 중 하나가 기록되지 않는 경우가 있었습니다. 우리는 모든 차이를 문서로 정리하고, 기존 시스템이 왜 그렇게 동작했는지 설명한 다음,
어떤 동작을 유지하고 어떤 것을 고칠지 업무 담당자와 함께 결정했습니다. 월말에는 그 문서가 사십 쪽이 넘었고, 새로 합류한 동료들이
가장 자주 읽는 자료가 되었습니다. 전환 당일의 작업은 십일 분 만에 끝났고 거의 아무도 눈치채지 못했습니다. 돌아보면 가장 중요했던 것은
특별한 도구가 아니라 인내심이었습니다. 바꾸기 전에 먼저 측정하고, 아무도 의존하지 않는다는 것이 증명되기 전까지는 문서화되지 않은 동작도
기능으로 취급하며, 엔지니어에게 오래된 코드를 천천히 읽을 시간을 주는 것입니다. 또한 모니터링의 중요성도 깨달았습니다.
"""


def _json_sample() -> str:
    orders = []
    for i in range(18):
        orders.append(
            {
                "id": f"ord_{1000 + i}",
                "status": ["paid", "refunded", "pending"][i % 3],
                "customer": {
                    "id": f"cus_{77 + i * 3}",
                    "email": f"user{i}@example.com",
                    "country": ["DE", "US", "JP"][i % 3],
                },
                "amount": {"value": 1999 + i * 125, "currency": ["EUR", "USD", "JPY"][i % 3]},
                "items": [
                    {
                        "sku": f"SKU-{i}-{j}",
                        "name": ["Notebook", "Pen set", "Desk lamp"][j],
                        "quantity": j + 1,
                        "price": 499 + j * 250,
                    }
                    for j in range(3)
                ],
                "created_at": f"2025-03-{1 + i:02d}T10:{i:02d}:00Z",
                "metadata": {"source": "web", "coupon": None if i % 2 else "SPRING25"},
            }
        )
    return json.dumps({"object": "list", "has_more": False, "data": orders}, indent=2)


MIXED = (
    "Deploy notes / 部署说明 / デプロイ手順 / 배포 노트\n\n"
    + ENGLISH.split("\n\n")[0]
    + "\n\n"
    + CHINESE[:300]
    + "\n\n```python\n"
    + CODE[:900]
    + "```\n\n"
    + JAPANESE[:250]
    + "\n\n"
    + json.dumps(
        {"ok": True, "regions": ["eu-west-1", "ap-northeast-1"], "latency_ms": [12.5, 48.0, 103.2]},
        indent=2,
    )
    + "\n\n"
    + KOREAN[:250]
    + "\nЗаметка: проверить миграцию базы данных перед выпуском. Ελέγξτε τα αρχεία καταγραφής. 🚀✅\n"
)

SAMPLES = {
    "english prose": ENGLISH,
    "source code": CODE,
    "chinese": CHINESE,
    "japanese": JAPANESE,
    "korean": KOREAN,
    "json": _json_sample(),
    "mixed": MIXED,
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_estimate_is_within_ten_percent_of_o200k(o200k: Any, kind: str) -> None:
    text = SAMPLES[kind]
    assert len(text.encode()) > 1_800  # kilobytes of text, not a toy sentence
    real = len(o200k.encode_ordinary(text))
    estimate = estimate_tokens(text)
    assert abs(estimate - real) <= 0.10 * real, (
        f"{kind}: estimated {estimate}, o200k_base says {real}"
    )


def test_estimate_scales_with_length_and_handles_edge_cases() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens(ENGLISH * 10) == pytest.approx(10 * estimate_tokens(ENGLISH), rel=0.01)
    for text in (CHINESE, KOREAN, MIXED):  # long texts are summed piecewise, exactly
        assert estimate_tokens(text * 40) == pytest.approx(40 * estimate_tokens(text), rel=0.01)
    assert estimate_tokens("\ud800 lone surrogate") > 0  # never raises on odd strings
    blob = base64.b64encode(bytes(range(256)) * 40).decode()
    assert estimate_tokens(blob) >= len(blob) // 8


def test_request_estimate_counts_system_tools_and_every_block() -> None:
    tool = ToolDefinition(
        "read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    history = [
        Message.user(ENGLISH),
        Message(
            role="assistant",
            content=[ToolCallBlock(id="c1", name="read_file", arguments={"path": "a.py"})],
        ),
        Message.tool([ToolResultBlock(call_id="c1", content=CODE)]),
    ]
    base = estimate_request("", [], [])
    full = estimate_request("Be brief.", [tool], history)
    assert full > base + estimate_tokens(ENGLISH) + estimate_tokens(CODE)
    assert estimate_request("Be brief.", [tool], history[:1]) < full


def test_context_estimate_is_anchored_to_reported_usage() -> None:
    history = [
        Message.user(ENGLISH),
        Message(role="assistant", content=[TextBlock(text="Noted.")]),
        Message.user(CODE),
    ]
    plain = estimate_request("", [], history)
    covered = estimate_request("", [], history[:2])
    # The provider counted 30% more than we estimate for the first two messages:
    reported = round(covered * 1.3)
    anchored = estimate_context(
        "", [], history, reported_input_tokens=reported, reported_messages=2
    )
    tail = plain - covered
    assert anchored == reported + round(tail * reported / covered)
    assert anchored > plain
    # No report, or one that does not match the history: the plain estimate.
    assert estimate_context("", [], history) == plain
    assert estimate_context("", [], history, reported_input_tokens=5, reported_messages=9) == plain
