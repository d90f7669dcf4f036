// The Lua runtime's budgets (lua_internal.h): instructions via a count hook (and their CPU-time
// equivalent, read there too: ipc/cpu_budget.h), memory via the allocator, wall clock in the
// hook. Instructions are charged ahead: the count hook is per thread in Lua 5.4, and what a
// thread ran since its last hook call is known to no one (lua_gethookcount is the interval, not
// what is left of it), so charging each interval after it ran would never charge a coroutine
// that ends, or stays suspended, before its first hook call, nor the part of an interval a
// lua_sethook throws away. So an interval is paid for when it is set (Prepay): the main
// thread's at StartBudget, a coroutine's first one before it runs (resume, a wrap function,
// close: PrepareThread), the next one at each hook call. An interval a thread leaves unused is
// charged all the same, so it starts small (kFirstHookEvery) and doubles up to kHookEvery: a
// coroutine costs at least kFirstHookEvery, at most twice what it ran plus kFirstHookEvery,
// and never more than kHookEvery beyond what it ran. A thread's extra space records
// the budget that paid its interval: a new thread (whose count Lua copied from its creator)
// and one from an earlier command are paid for again, from this budget, before they run.
// Once a budget is spent the whole VM is spent for the rest of the command (one flag per VM,
// not per thread), and every way plugin code could go on is closed:
//  - every hook call raises once spent, and a thread that sees it switches to a hook on every
//    instruction; coroutine.resume/wrap/close pay for a thread's interval before it runs, or
//    refuse once nothing is left;
//  - pcall, xpcall, coroutine.resume/wrap/close and load (whose reader runs protected) are
//    wrapped: they refuse to start once spent and re-raise when spent on return, so no Lua
//    error boundary can catch the budget (a wrapped pcall keeps Lua's yield-across-pcall);
//  - xpcall's message handler runs inside the hook that raised, where Lua runs no hook at all:
//    once spent the plugin's handler is not called;
//  - every binding that reaches the host (sys.*, editor.*, print, warn) refuses once spent,
//    and outside a command: a C function can be called with no Lua instruction in between
//    (a __close or __index metamethod, a message handler);
//  - __gc is refused at setmetatable: finalizers run with hooks off, at any allocation and at
//    lua_close, i.e. outside every budget.
#include <lauxlib.h>
#include <lua.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "host/lua_internal.h"

namespace anvil::host::lua {

// A thread's extra space holds the number of the budget that paid its interval.
static_assert(LUA_EXTRASPACE >= sizeof(uintptr_t));

void* LuaRuntime::Alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* self = static_cast<LuaRuntime*>(ud);
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    std::free(ptr);
    self->used_ -= old;
    return nullptr;
  }
  // Lua requires shrinking to succeed; growth past the budget fails, and keeps failing.
  if (nsize > old &&
      (self->memory_spent_ || self->used_ - old + nsize > self->limits_.memory_bytes)) {
    self->memory_spent_ = true;
    return nullptr;
  }
  void* p = std::realloc(ptr, nsize);
  if (!p) return nullptr;
  self->used_ = self->used_ - old + nsize;
  return p;
}

void LuaRuntime::Hook(lua_State* L, lua_Debug*) {
  LuaRuntime* self = Self(L);
  if (!self->budget_active_) {
    // A thread that kept its hook from an earlier command, running outside any: cannot happen
    // (no plugin code runs between commands), and must not count against the next budget.
    lua_sethook(L, nullptr, 0, 0);
    return;
  }
  if (!self->Spent()) {
    // The interval that just ran was paid for when it was set, unless the thread's hook comes
    // from an earlier budget (a thread left spent at 1, or one not prepared before it ran):
    // that one is charged now, after the fact.
    const int ran = lua_gethookcount(L);
    if (!self->Prepaid(L)) self->instructions_left_ -= ran;
    self->Prepay(L, std::clamp(2 * ran, kFirstHookEvery, kHookEvery), /*in_hook=*/true);
    if (!self->Spent()) return;
  }
  self->RaiseSpent(L, /*in_hook=*/true);
}

void LuaRuntime::Prepay(lua_State* L, int interval, bool in_hook) {
  const auto now = Clock::now();
  if (now >= deadline_) deadline_passed_ = true;
  // CPU time spent inside builtins, which run no counted instruction, spends the budget too.
  if (cpu_.Due(now) && cpu_.Over(now, ipc::ThreadCpuTime())) instructions_spent_ = true;
  if (instructions_left_ <= 0) instructions_spent_ = true;
  if (Spent()) {
    lua_sethook(L, Hook, LUA_MASKCOUNT, 1);
    return;
  }
  const int n = static_cast<int>(std::min<int64_t>(interval, instructions_left_));
  instructions_left_ -= n;
  // In the hook, Lua has just reset the count to the interval that ran.
  if (!in_hook || lua_gethookcount(L) != n) lua_sethook(L, Hook, LUA_MASKCOUNT, n);
  // The main thread's extra space stays 0: every new thread starts with a copy of it.
  if (L != L_) std::memcpy(lua_getextraspace(L), &budget_number_, sizeof budget_number_);
}

bool LuaRuntime::Prepaid(lua_State* L) const {
  if (lua_gethook(L) != Hook) return false;
  if (L == L_) return true;  // prepaid at StartBudget
  uintptr_t paid_in = 0;
  std::memcpy(&paid_in, lua_getextraspace(L), sizeof paid_in);
  return paid_in == budget_number_;
}

void LuaRuntime::RaiseSpent(lua_State* L, bool in_hook) {
  // From now on every instruction of this thread fails, so not even the unwinding runs one.
  lua_sethook(L, Hook, LUA_MASKCOUNT, 1);
  // A slot for the message without growing the stack: Lua gives a hook LUA_MINSTACK free
  // slots; a C function may have used all of its own, and drops them (the error unwinds its
  // frame anyway).
  if (!in_hook) lua_settop(L, 0);
  Message m = instructions_spent_ ? kInstructionsMessage
              : deadline_passed_  ? kDeadlineMessage
                                  : kMemoryMessage;
  lua_rawgeti(L, LUA_REGISTRYINDEX, messages_[m]);
  lua_error(L);
  std::abort();  // lua_error does not return
}

void LuaRuntime::Admit(lua_State* L) {
  if (budget_active_ && !Spent() && Clock::now() >= deadline_) deadline_passed_ = true;
  if (Spent()) RaiseSpent(L);
  if (!budget_active_) {
    lua_settop(L, 0);
    lua_pushliteral(L, "denied: the plugin API is not available outside a command");
    lua_error(L);
  }
}

void LuaRuntime::PrepareThread(lua_State* co) {
  if (co != nullptr && !Prepaid(co)) Prepay(co, kFirstHookEvery, /*in_hook=*/false);
}

void LuaRuntime::StartBudget() {
  ++budget_number_;  // every thread's paid interval is now from an earlier budget
  instructions_left_ = static_cast<int64_t>(
      std::min<uint64_t>(limits_.instructions, std::numeric_limits<int64_t>::max()));
  instructions_spent_ = false;
  deadline_passed_ = false;
  deadline_ = Clock::now() + limits_.deadline;
  cpu_ = ipc::CpuWatch(ipc::CpuBudgetFor(limits_.instructions), Clock::now(), ipc::ThreadCpuTime());
  if (memory_spent_) {
    memory_spent_ = false;
    lua_gc(L_, LUA_GCCOLLECT);
  }
  Prepay(L_, kHookEvery, /*in_hook=*/false);
}

Status LuaRuntime::MakeSpentMessages() {
  // The spent budgets' messages, made now: raising one must not need an allocation (the memory
  // budget may be the one that is spent).
  const char* const messages[kMessageCount] = {"limit: instruction budget exhausted",
                                               "timeout: command passed its deadline",
                                               "limit: memory budget exhausted"};
  for (int i = 0; i < kMessageCount; ++i) {
    lua_pushstring(L_, messages[i]);
    messages_[i] = luaL_ref(L_, LUA_REGISTRYINDEX);
    if (messages_[i] == LUA_REFNIL || messages_[i] == LUA_NOREF) {
      return Fail("limit", "cannot set up the Lua state within the memory budget");
    }
  }
  return Ok();
}

// ---- error boundaries that a spent budget crosses ----------------------------------------
// Lua's pcall, xpcall, coroutine.resume/wrap/close and load catch errors; these wrappers make
// the budget's error pass through them (see the top of the file).

namespace {

// load() forced to text: a binary chunk (precompiled bytecode) can corrupt the VM. A reader
// function runs protected inside load, so load is an error boundary too (GuardedCall's checks).
int LoadText(lua_State* L) {
  LuaRuntime* self = Self(L);
  self->Admit(L);
  lua_settop(L, 4);
  if (!lua_isnil(L, 3)) {
    const char* mode = luaL_checkstring(L, 3);
    if (std::strcmp(mode, "t") != 0) {
      // As load() reports any failure: nil plus a message.
      lua_pushnil(L);
      lua_pushliteral(L, "denied: only text chunks can be loaded (no binary chunks)");
      return 2;
    }
  }
  lua_pushliteral(L, "t");
  lua_replace(L, 3);
  // Call the original load (upvalue 1) with mode forced to "t".
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 4, LUA_MULTRET);
  if (self->Spent()) self->RaiseSpent(L);
  return lua_gettop(L);
}

// Lua's finishpcall, plus: a spent budget is re-raised instead of returned as (false, err).
int FinishGuardedPcall(lua_State* L, int status, lua_KContext extra) {
  LuaRuntime* self = Self(L);
  if (self->Spent()) self->RaiseSpent(L);
  if (status != LUA_OK && status != LUA_YIELD) {
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
  }
  return lua_gettop(L) - static_cast<int>(extra);
}

int GuardedPcall(lua_State* L) {
  Self(L)->Admit(L);
  luaL_checkany(L, 1);
  lua_pushboolean(L, 1);
  lua_insert(L, 1);
  // lua_pcallk with a continuation, as Lua's own pcall: a coroutine may yield inside it.
  int status = lua_pcallk(L, lua_gettop(L) - 2, LUA_MULTRET, 0, 0, FinishGuardedPcall);
  return FinishGuardedPcall(L, status, 0);
}

// xpcall's message handler, in front of the plugin's (upvalue 1). A budget error is raised
// inside the count hook, where Lua calls the handler with every hook off: the plugin's handler
// must not run then, nor ever once the budget is spent.
int GuardedMessageHandler(lua_State* L) {
  if (Self(L)->Spent()) {
    lua_settop(L, 1);
    return 1;
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

int GuardedXpcall(lua_State* L) {
  Self(L)->Admit(L);
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, GuardedMessageHandler, 1);
  lua_replace(L, 2);
  lua_pushboolean(L, 1);
  lua_pushvalue(L, 1);
  lua_rotate(L, 3, 2);
  int status = lua_pcallk(L, n - 2, LUA_MULTRET, 2, 2, FinishGuardedPcall);
  return FinishGuardedPcall(L, status, 2);
}

// coroutine.resume, coroutine.close, a coroutine.wrap function, load: the original function is
// upvalue 1; the coroutine it runs is upvalue 2 (wrap) or argument 1 (resume, close).
int GuardedCall(lua_State* L) {
  LuaRuntime* self = Self(L);
  self->Admit(L);
  lua_State* co = lua_tothread(L, lua_upvalueindex(2));
  if (co == nullptr) co = lua_tothread(L, 1);
  self->PrepareThread(co);
  if (self->Spent()) self->RaiseSpent(L);
  const int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, LUA_MULTRET);
  if (self->Spent()) self->RaiseSpent(L);
  return lua_gettop(L);
}

int GuardedWrap(lua_State* L) {
  Self(L)->Admit(L);
  const int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));  // the original coroutine.wrap
  lua_insert(L, 1);
  lua_call(L, n, 1);
  // Lua's wrap function keeps its coroutine as its only upvalue.
  if (lua_getupvalue(L, -1, 1) == nullptr || !lua_isthread(L, -1)) {
    return luaL_error(L, "internal: unexpected coroutine.wrap");
  }
  lua_pushcclosure(L, GuardedCall, 2);
  return 1;
}

// Replaces table[name] (table on top of the stack) with `fn` closed over the original.
void GuardField(lua_State* L, const char* name, lua_CFunction fn) {
  lua_getfield(L, -1, name);
  lua_pushcclosure(L, fn, 1);
  lua_setfield(L, -2, name);
}

// A finalizer runs with Lua's hooks off, at whatever allocation triggers a collection and at
// lua_close: outside every budget. An object is marked for finalization only when its
// metatable holds a non-nil __gc at setmetatable time, so refusing that is enough.
int SetMetatableGuarded(lua_State* L) {
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_pushliteral(L, "__gc");
    if (lua_rawget(L, 2) != LUA_TNIL) {
      lua_pushliteral(L,
                      "denied: __gc metamethods are not available to plugins (a finalizer would "
                      "run outside the command's budget)");
      return lua_error(L);
    }
    lua_pop(L, 1);
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

}  // namespace

void InstallBudgetGuards(lua_State* L, int g) {
  lua_getfield(L, g, "load");
  lua_pushcclosure(L, LoadText, 1);
  lua_setfield(L, g, "load");
  // The error boundaries a spent budget must cross, and setmetatable without __gc.
  lua_pushcfunction(L, GuardedPcall);
  lua_setfield(L, g, "pcall");
  lua_pushcfunction(L, GuardedXpcall);
  lua_setfield(L, g, "xpcall");
  GuardField(L, "setmetatable", SetMetatableGuarded);
  lua_getfield(L, g, "coroutine");
  GuardField(L, "resume", GuardedCall);
  GuardField(L, "close", GuardedCall);
  GuardField(L, "wrap", GuardedWrap);
  lua_pop(L, 1);
}

}  // namespace anvil::host::lua
