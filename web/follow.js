// Following a session (SPEC R-MULTI-2, R-MULTI-3): `session/attach` makes the daemon send this page every update
// of a session, whoever prompts — another tab, zerocode, an editor. Each SessionView remembers the last `seq` it
// showed; after a dropped connection the page attaches again with `afterSeq` and the daemon replays exactly what
// was missed (or says `gap`, and the transcript is read again). Replayed and live updates may arrive before the
// attach answer, so a view holds them (`view.held`) until the answer says where it stands.

import { steerRows } from "./branching.js";
import { call } from "./connection.js";
import { reportError } from "./errors.js";
import { ConnectionError, RpcError } from "./rpc.js";
import { bubble } from "./transcript.js";

const attaching = new Map(); // sessionId → the follow() under way, so two callers share one attach

/** Attach `view` to its live session: the first time, its transcript then live updates; again, after `view.seq`. */
export function follow(view) {
  let pending = attaching.get(view.id);
  if (!pending) {
    pending = attach(view).finally(() => attaching.delete(view.id));
    attaching.set(view.id, pending);
  }
  return pending;
}

async function attach(view) {
  const after = view.seq; // null: nothing of this session shown yet
  view.held ??= [];
  let result;
  try {
    result = await call("session/attach", after === null ? { sessionId: view.id } : { sessionId: view.id, afterSeq: after });
    if (after === null && result.running) {
      // A turn runs already: ask again from its start (`turnStartSeq`, R-MULTI-2; right also after a restart made
      // the numbering jump, where afterSeq 0 is a gap), to show it from its first update (as `zeroclaw chat
      // --session` does). Attaching again restarts this connection's stream from there.
      result = await call("session/attach", { sessionId: view.id, afterSeq: result.turnStartSeq ?? 0 });
    }
  } catch (err) {
    release(view);
    if (after !== null && err instanceof RpcError && err.code === -32602) {
      // The session's count is behind ours (another session under the same id): start again from its transcript.
      view.seq = null;
      return attach(view);
    }
    // The connection dropped (the banner says so): try again on the next reconnect (chat.js resumeViews).
    if (err instanceof ConnectionError) view.following = true;
    else reportError("Follow session", err);
    return false;
  }
  view.attached = true;
  if (after === null || result.gap) {
    // Nothing shown yet, or the daemon no longer has every update since: read the transcript, then go on live.
    view.turn = null;
    view.running = false;
    // With the whole replay (no gap), the running turn starts after `turnStartSeq` (a daemon without it: after the
    // last turn_complete held, or at 1).
    const start = after === null && result.running && !result.gap ? (result.turnStartSeq ?? lastEnd(view, result.seq)) : null;
    if (start !== null && (await view.load({ cutTurns: turnsAfter(view, start) }))) view.seq = start;
    else {
      if (start === null) await view.load();
      view.seq = result.seq;
      if (result.running) view.beginTurn("A turn is running; its output continues here:").joined = true;
      else await turnBegunMeanwhile(view, result.seq);
    }
  }
  release(view, result.seq);
  if (!result.running && view.running) {
    // Everything up to result.seq is shown and the daemon runs no turn: the prompt this page sent never got there.
    view.failTurn(view.turn, new ConnectionError("The message did not reach the daemon before the connection dropped; send it again."));
  }
  // Approvals asked before this page followed (their approval_request is not replayed) still need an answer.
  for (const requestId of result.pendingApprovals ?? []) view.pendingApproval(requestId);
  release(view);
  view.scrollToEnd();
  return true;
}

/**
 * No turn ran at `seq` (the attach), but one began while the transcript was being read (its updates are held), so
 * the transcript read may hold part or all of it. Read it again up to that turn's prompt, which starts it; its
 * updates follow from the first. (Each turn's prompt is stored before its first update.)
 */
async function turnBegunMeanwhile(view, seq) {
  const turns = turnsAfter(view, seq);
  if (turns > 0) await view.load({ cutTurns: turns }); // view.seq stays at `seq`
}

/** How many turns the held updates after `seq` belong to: those they end, and one they leave running. */
function turnsAfter(view, seq) {
  const bySeq = new Map((view.held ?? []).filter((u) => Number.isInteger(u.seq) && u.seq > seq).map((u) => [u.seq, u]));
  const after = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  const ends = after.filter((u) => u.type === "turn_complete").length;
  return ends + (after.length && after.at(-1).type !== "turn_complete" ? 1 : 0);
}

/** The seq of the last turn_complete held up to `upTo`; 0 if none. */
function lastEnd(view, upTo) {
  const ends = (view.held ?? []).filter((u) => u.type === "turn_complete" && Number.isInteger(u.seq) && u.seq <= upTo);
  return Math.max(0, ...ends.map((u) => u.seq));
}

/**
 * A turn that was already running when the view first followed it, and whose start the daemon no longer kept,
 * ended. What it had said before came from the transcript (the daemon's checkpoint, which may end a little before
 * or after the attach), so the join can repeat or miss a few characters: now that the turn is stored whole, read
 * the transcript again.
 */
export async function redrawJoined(view) {
  view.held ??= [];
  await view.load();
  release(view);
}

/**
 * A turn prompted elsewhere (another tab, zerocode) began: its updates do not carry the prompt, the transcript
 * does (stored as the turn starts). Show it as the user's bubble where the turn's note stands.
 */
export async function showPrompt(view, turn) {
  const page = await call("session/messages", { sessionId: view.id, limit: 50, turnEnds: true }).catch(() => null);
  const steers = steerRows(page?.messages ?? [], page?.turnEnds); // a steer may have joined the turn already
  const row = (page?.messages ?? []).findLast((r) => r.role === "user" && !steers.has(r.index));
  if (row && turn.note?.isConnected) turn.note.replaceWith(bubble("user", row.content));
}

/** Show the held updates numbered up to `upTo` (all of them without it), in seq order; keep holding the rest. */
function release(view, upTo = Infinity) {
  const held = (view.held ?? []).sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  view.held = null;
  const later = held.filter((params) => Number.isInteger(params.seq) && params.seq > upTo);
  for (const params of held) if (!later.includes(params)) view.receive(params);
  if (upTo !== Infinity) view.held = later;
}
