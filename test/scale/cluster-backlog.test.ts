/**
 * The cluster backlog (queue/cluster-backlog.ts) counts this replica's submissions on top of the last
 * poll of the store. A submission made while a poll runs may already be in the poll's snapshot; counted
 * again, a tenant's own sequential burst was refused below its share (33 accepted of a budget of 40 in
 * scale/control-plane-isolation.test.ts on a busy box). With the snapshot's highest seq, a submission it
 * saw is not counted twice; one it did not see still counts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ClusterBacklog, type ClusterLoadSource } from '../../src/service/queue/cluster-backlog.js';

/** A store whose poll answers only when the test says, with the snapshot the test gives. */
function heldSource(): {
  src: ClusterLoadSource;
  answer(queued: Record<string, number>, maxSeq: number): void;
} {
  let resolve: ((v: { queued: Map<string, number>; maxSeq: number }) => void) | null = null;
  return {
    src: {
      queuedByTenant: () => new Promise((r) => (resolve = r)),
      finishedBetween: async () => 0,
    },
    answer: (queued, maxSeq) => resolve!({ queued: new Map(Object.entries(queued)), maxSeq }),
  };
}

void test('a submission the running poll already saw is not counted twice; one it missed is', async () => {
  const held = heldSource();
  const b = new ClusterBacklog(
    held.src,
    () => 1,
    () => undefined,
    () => 1_000_000,
  );
  // Two jobs stored (seq 1, 2) before any poll: counted locally.
  b.submitting('alice')(true, 1);
  b.submitting('alice')(true, 2);
  assert.equal(b.backlogFor('alice'), 2);
  const polling = b.poll();
  // While the poll's query runs: seq 3 commits before its snapshot, seq 4 after it.
  b.submitting('alice')(true, 3);
  b.submitting('alice')(true, 4);
  assert.equal(b.backlogFor('alice'), 4);
  held.answer({ alice: 3 }, 3);
  await polling;
  assert.equal(b.backlogFor('alice'), 4, 'seq 1-3 from the snapshot, seq 4 from this replica');
  assert.equal(b.backlog(), 4);
  // A submission whose seq is unknown is kept until a poll that began after it.
  const next = b.poll();
  b.submitting('bob')(true);
  held.answer({ alice: 4 }, 9);
  await next;
  assert.equal(b.backlogFor('bob'), 1, 'seq unknown: still counted');
  assert.equal(b.backlog(), 5);
  // Refused or failed inserts are never counted.
  b.submitting('alice')(false);
  assert.equal(b.backlogFor('alice'), 4);
});
