/**
 * The host's edge for a guest's `job` frames (local/guestJobs.ts): untrusted frames, so a malformed one, an end
 * for no running job, a job number used twice or a flood of starts is refused (the session then ends the
 * guest); an end makes one note; the session's end ends its running jobs.
 */
import * as assert from 'node:assert/strict';
import type { JobChanged } from '../../src/common/events';
import { GuestJobs } from '../../src/core/runtime/local/guestJobs';

function jobs(maxJobs = 2): { jobs: GuestJobs; events: JobChanged[] } {
  const j = new GuestJobs(() => 's1', 90 * 60_000, maxJobs);
  const events: JobChanged[] = [];
  j.changed.on((e) => events.push(e));
  return { jobs: j, events };
}

describe('guest jobs: the host edge for job frames', () => {
  it('a start and an end make one running event and one note, with the execution that started it', () => {
    const { jobs: j, events } = jobs();
    assert.equal(j.onFrame({ t: 'job', job: 1, state: 'running', run: 4 }, { itemId: 'exec_4', options: {}, tools: true }), undefined);
    assert.equal(j.count, 1);
    const end = {
      t: 'job' as const,
      job: 1,
      state: 'failed',
      seconds: 372,
      value: null,
      error: { type: 'ValueError', message: 'bad row 7' },
      tail: 'row 6\n',
      cut: false,
    };
    assert.equal(j.onFrame(end, undefined), undefined);
    assert.equal(j.count, 0);
    assert.deepEqual(
      events.map((e) => [e.session_id, e.job, e.state, e.item_id]),
      [
        ['s1', 1, 'running', 'exec_4'],
        ['s1', 1, 'failed', 'exec_4'],
      ],
    );
    assert.equal(events[1].message, 'Background job 1 failed after 6 min 12 s: ValueError: bad row 7\nThe end of its output:\nrow 6');
  });

  it('refuses a malformed frame, an end for no running job, a number used twice, and more starts than the limit allows', () => {
    const { jobs: j, events } = jobs(1);
    assert.equal(j.onFrame({ t: 'job', job: '1', state: 'running' }, undefined), 'a malformed job frame');
    assert.equal(j.onFrame({ t: 'job', job: 1, state: 'done', seconds: 1 }, undefined), 'a job frame for no running job');
    assert.equal(j.onFrame({ t: 'job', job: 1, state: 'running' }, undefined), undefined);
    assert.equal(j.onFrame({ t: 'job', job: 1, state: 'running' }, undefined), 'a job frame for a job already started');
    assert.equal(j.onFrame({ t: 'job', job: 1, state: 'finished' }, undefined), 'a job frame for no running job');
    let refused: string | undefined;
    for (let n = 2; n < 100 && !refused; n++) refused = j.onFrame({ t: 'job', job: n, state: 'running' }, undefined);
    assert.equal(refused, 'more running jobs than codeact.jobs.maxPerSession allows');
    assert.ok(j.count <= 17);
    assert.ok(
      events.every((e) => e.state === 'running'),
      'no refused frame made a note',
    );
  });

  it("the session's end ends each running job once, and says its result is gone", () => {
    const { jobs: j, events } = jobs();
    j.onFrame({ t: 'job', job: 1, state: 'running' }, { itemId: 'x', options: {}, tools: true });
    j.onFrame({ t: 'job', job: 2, state: 'running' }, { itemId: 'y', options: {}, tools: true });
    j.onFrame({ t: 'job', job: 2, state: 'timed_out', seconds: 5400, tail: '', cut: true }, undefined);
    j.sessionEnded('it was idle');
    j.sessionEnded('it was idle');
    const ended = events.filter((e) => e.state !== 'running');
    assert.deepEqual(
      ended.map((e) => [e.job, e.state]),
      [
        [2, 'timed_out'],
        [1, 'ended'],
      ],
    );
    assert.match(ended[0].message, /reached its time limit of 90 min \(codeact\.jobs\.maxMinutes\)\.\n\(Its output passed the cap/);
    assert.match(ended[1].message, /^Background job 1 was ended after .* with its Python session \(it was idle\); its result is gone\.$/);
  });
});
