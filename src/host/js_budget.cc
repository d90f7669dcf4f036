// The QuickJS runtime's budgets (js_internal.h).
//
// QuickJS polls for interrupts at every jump, every call and in a few internal loops
// (prototype walks, for-in, regexp backtracking), and calls the interrupt handler once every
// 10,000 polls (JS_INTERRUPT_COUNTER_INIT in quickjs.c; the same count in libregexp.c). One
// poll is counted as one unit of RuntimeLimits::instructions, so a call may make
// ceil(instructions / 10,000) handler calls. In a tight loop a poll is one iteration, the unit
// the Lua count hook sees for `while true do end`; in straight-line code one poll covers a few
// bytecodes, so the JS budget is coarser than Lua's, never finer. The poll counter is the
// context's (there is one): generators, async functions and promise jobs poll on it too, and it
// is reset only when it reaches zero, so no poll is lost when one of them ends. libregexp's
// counter is its own, started afresh at each match: a match of fewer than 10,000 backtracking
// steps calls no handler and is charged nothing, a builtin's loop that the CPU-time check below
// bounds like any other. The handler also checks the steady-clock deadline. Once the
// instruction budget, the deadline or the memory budget (the allocator here, not QuickJS's own
// accounting, so the runtime knows it happened) is spent,
// the handler returns 1 at every later poll: QuickJS's interrupt error skips catch and finally,
// so `try { for(;;){} } catch {}` loops cannot keep a plugin alive; and every API binding
// refuses with an uncatchable error, so the window before the next poll cannot reach the host.
// That alone is not enough: several builtins turn any exception, the uncatchable one included,
// into a rejected promise and return normally (the Promise constructor's executor, an async
// function's or async generator's body, Promise.all/race/any/allSettled's iteration, reading a
// thenable's `then`), after which plugin code would run on for another 10,000 polls, forever.
// So a spent budget also shrinks QuickJS's stack limit to one byte: every function call (JS,
// native, bound, getter, proxy trap, generator step) checks the stack before it starts, so no
// function can start any more and no such builtin can even be entered. What still runs is the
// frames already on the stack, each until its next poll, where it is interrupted again: at
// most one swallowed error per builtin frame below, bounded by the stack. The interrupt error
// itself must be allocated: once spent, the allocator lets the heap exceed the budget by a
// small slack renewed at each interrupt, else a full heap would turn the uncatchable error
// into a catchable `null` (QuickJS throws null when it cannot allocate an error).
// Promise jobs run only while the call is within its budget and deadline; when a budget ran out
// with jobs still queued, the runtime stops for good (those jobs must not run later either).
#include <malloc.h>
#include <quickjs.h>

#include <cstdlib>

#include "common/sanitizer.h"
#include "host/js_internal.h"

namespace anvil::host::js {
namespace {

constexpr uint64_t kPollsPerInterrupt = 10000;  // JS_INTERRUPT_COUNTER_INIT in quickjs.c
constexpr size_t kMallocOverhead = 8;           // MALLOC_OVERHEAD in quickjs.c
// Past a spent budget: room over the memory budget for the interrupt error (an Error object,
// its message, a backtrace that is dropped when it does not fit), renewed at each interrupt.
constexpr size_t kInterruptSlack = 64u << 10;
// QuickJS's stack limit once spent: every call fails its stack check (0 would disable it).
constexpr size_t kSpentStackBytes = 1;

}  // namespace

// The allocator is QuickJS's default one plus a flag: the runtime must know that a failure was
// the memory budget (QuickJS only raises a catchable InternalError) so that it can make it stick.
// True when growing a block from `old_size` to `new_size` bytes must fail (and marks the memory
// budget spent). Once a budget is spent, up to slack_limit_ is allowed: the interrupt's error.
bool JsRuntime::Refuse(JSMallocState* s, size_t old_size, size_t new_size) {
  auto* self = static_cast<JsRuntime*>(s->opaque);
  if (new_size <= old_size) return false;
  const size_t growth = new_size - old_size;
  if (s->malloc_size <= s->malloc_limit && growth <= s->malloc_limit - s->malloc_size) return false;
  if (self->Spent() && s->malloc_size <= self->slack_limit_ &&
      growth <= self->slack_limit_ - s->malloc_size) {
    return false;
  }
  if (!self->memory_spent_) {
    self->memory_spent_ = true;
    self->OnSpent();
  }
  return true;
}

void* JsRuntime::Malloc(JSMallocState* s, size_t size) {
  auto* self = static_cast<JsRuntime*>(s->opaque);
  self->malloc_state_ = s;
  if (Refuse(s, 0, size)) return nullptr;
  void* p = std::malloc(size == 0 ? 1 : size);
  if (!p) {
    if (!self->memory_spent_) {
      self->memory_spent_ = true;
      self->OnSpent();
    }
    return nullptr;
  }
  s->malloc_count++;
  s->malloc_size += UsableSize(p) + kMallocOverhead;
  return p;
}

void JsRuntime::Free(JSMallocState* s, void* ptr) {
  if (!ptr) return;
  s->malloc_count--;
  s->malloc_size -= UsableSize(ptr) + kMallocOverhead;
  std::free(ptr);
}

void* JsRuntime::Realloc(JSMallocState* s, void* ptr, size_t size) {
  if (!ptr) return size == 0 ? nullptr : Malloc(s, size);
  if (size == 0) {
    Free(s, ptr);
    return nullptr;
  }
  auto* self = static_cast<JsRuntime*>(s->opaque);
  size_t old_size = UsableSize(ptr);
  if (Refuse(s, old_size, size)) return nullptr;
  void* p = std::realloc(ptr, size);
  if (!p) {
    if (!self->memory_spent_) {
      self->memory_spent_ = true;
      self->OnSpent();
    }
    return nullptr;
  }
  s->malloc_size = s->malloc_size - old_size + UsableSize(p);
  return p;
}

int JsRuntime::Interrupt(JSRuntime*, void* opaque) {
  auto* self = static_cast<JsRuntime*>(opaque);
  if (!self->Spent()) {
    if (self->polls_left_ == 0) {
      self->instructions_spent_ = true;
    } else {
      --self->polls_left_;
    }
    const auto now = Clock::now();
    if (now >= self->deadline_) self->deadline_passed_ = true;
    // CPU time spent inside builtins, which poll rarely or never, spends the budget too.
    if (self->cpu_.Due(now) && self->cpu_.Over(now, ipc::ThreadCpuTime())) {
      self->instructions_spent_ = true;
    }
    if (!self->Spent()) return 0;
    self->OnSpent();
  }
  // Once spent, stay spent: every later poll interrupts again, so a catch handler or a
  // finally block gets at most one poll interval before it is cut too. QuickJS allocates the
  // interrupt error right after this returns: give it room even when the heap is full.
  const size_t heap = self->malloc_state_ ? self->malloc_state_->malloc_size : 0;
  self->slack_limit_ = heap + kInterruptSlack;
  return 1;
}

void JsRuntime::OnSpent() {
  // From here no function (plugin, builtin or API binding) can start: each checks the stack
  // limit before running. Frames already running end at their next interrupt poll.
  if (rt_) JS_SetMaxStackSize(rt_, kSpentStackBytes);
}

size_t JsRuntime::StackBytes() const {
  // 0 would switch QuickJS's stack check off (a crash instead of an error): keep the default.
  const auto bytes = static_cast<size_t>(limits_.stack_bytes != 0 ? limits_.stack_bytes
                                                                  : RuntimeLimits{}.stack_bytes);
  // AddressSanitizer's redzones make every C frame several times larger: the same JS depth
  // needs a proportionally larger native stack (sanitizer builds only; the thread's stack is
  // far larger than either).
  return ANVIL_ASAN ? bytes * 4 : bytes;
}

void JsRuntime::StartBudget() {
  instructions_spent_ = false;
  deadline_passed_ = false;
  slack_limit_ = 0;
  JS_SetMaxStackSize(rt_, StackBytes());
  if (memory_spent_) {
    memory_spent_ = false;
    JS_RunGC(rt_);  // cycles left by the unwound call
  }
  polls_left_ = limits_.instructions / kPollsPerInterrupt +
                (limits_.instructions % kPollsPerInterrupt != 0 ? 1 : 0);
  auto now = Clock::now();
  auto room = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now);
  deadline_ = limits_.deadline >= room
                  ? Clock::time_point::max()
                  : now + std::chrono::duration_cast<Clock::duration>(limits_.deadline);
  cpu_ = ipc::CpuWatch(ipc::CpuBudgetFor(limits_.instructions), now, ipc::ThreadCpuTime());
  // The stack limit counts from the frame the call starts in, not where the runtime was made.
  JS_UpdateStackTop(rt_);
}

std::optional<Error> JsRuntime::SpentError() const {
  if (instructions_spent_) return Error{"limit", "instruction budget exhausted", 0};
  if (deadline_passed_) return Error{"timeout", "command passed its deadline", 0};
  if (memory_spent_) return Error{"limit", "memory budget exhausted", 0};
  return std::nullopt;
}

bool JsRuntime::Admit(JSContext* ctx) {
  if (!Spent() && Clock::now() >= deadline_) {
    deadline_passed_ = true;
    OnSpent();
  }
  if (auto e = SpentError()) {
    ThrowUncatchable(ctx, *e);
    return false;
  }
  return true;
}

// A pending ordinary exception is dropped (the caller replaces it with its own error); one
// caused by a spent budget stays pending. Returns true when it was dropped. (Uncatchable
// errors only exist once a budget is spent: the interrupt handler or Admit threw them.)
bool DropOrdinaryException(JsRuntime& self, JSContext* ctx) {
  if (self.Spent()) return false;
  JS_FreeValue(ctx, JS_GetException(ctx));
  return true;
}

// Runs queued promise jobs while the call is within its budget and deadline, never after.
Status JsRuntime::DrainJobs() {
  while (JS_IsJobPending(rt_)) {
    if (!Spent() && Clock::now() >= deadline_) {
      deadline_passed_ = true;
      OnSpent();
    }
    if (auto e = SpentError()) return tl::unexpected(*e);
    JSContext* job_ctx = nullptr;
    if (JS_ExecutePendingJob(rt_, &job_ctx) < 0) return tl::unexpected(TakeError());
  }
  if (auto e = SpentError()) return tl::unexpected(*e);
  return Ok();
}

// Ends a call. Jobs the plugin queued belong to this call and run now (under its budget); if a
// budget ran out with jobs still queued the runtime stops, since running them in a later call
// would be running them past this call's deadline.
// A spent budget is what the call reports even when the plugin caught the failed allocation
// and returned before the next interrupt poll could stop it.
std::optional<Error> JsRuntime::FinishCall(std::optional<Error> failure) {
  if (!Spent()) {
    Status drained = DrainJobs();
    if (!drained && !failure) failure = drained.error();
  }
  if (auto spent = SpentError()) {
    failure = *spent;
    if (JS_IsJobPending(rt_)) {
      stopped_ = Error{spent->error_code(),
                       spent->message + "; the plugin left work queued and must be reloaded", 0};
    }
  }
  return failure;
}

}  // namespace anvil::host::js
