/** The headline table: one row per target (docs/benchmarks.md), with the ratio measured in this run. */

const fmt = (v, digits = 0) => (v === null || v === undefined ? '-' : Number(v).toFixed(digits));
const r2 = (v) => (v === null || v === undefined || !Number.isFinite(v) ? null : Math.round(v * 100) / 100);

function row(n, scenario, metric, { service, baseline, ratio = null, target, met = null, note = null }) {
  return { n, scenario, metric, service, baseline, ratio: r2(ratio), target, met, note };
}

const unavailable = (n, scenario, result, target) =>
  row(n, scenario, '-', { service: '-', baseline: '-', target, met: null, note: result?.error ?? 'not run' });

function roomsRows(n, label, res, min) {
  if (!res || res.maxRate?.service === null || res.maxRate?.service === undefined) return [unavailable(n, label, res, `>= ${min} x R1`)];
  const svcMax = res.atMax.service;
  const r1Max = res.atMax.R1;
  const ms = (step) => (step ? `${fmt(step.delivery.p50, 1)}/${fmt(step.delivery.p99, 1)} ms` : '-');
  return [
    row(n, label, 'max msg/s, p99 ack < 50 ms, no loss', {
      service: fmt(res.maxRate.service),
      baseline: `R1 ${fmt(res.maxRate.R1)}, R2 ${fmt(res.maxRate.R2)}`,
      ratio: res.ratio.vsR1,
      target: `>= ${min} x R1`,
      met: res.ratio.vsR1 !== null && res.ratio.vsR1 >= min,
      note: res.ratio.vsR2 !== null ? `${r2(res.ratio.vsR2)} x R2` : null,
    }),
    ...(res.maxRate.R3 !== undefined ? [row(n, label, '... against R3, the ceiling of the design (R1 + the same writes on a writer thread)', {
      service: fmt(res.maxRate.service),
      baseline: `R3 ${fmt(res.maxRate.R3)} (${fmt(res.ratio.r3VsR1, 2)} x R1)`,
      ratio: res.ratio.vsR3,
      target: '-',
    })] : []),
    ...(res.maxRate.compare !== undefined ? [row(n, label, '... the build of --compare-dist', {
      service: fmt(res.maxRate.compare), baseline: `R1 ${fmt(res.maxRate.R1)}`, ratio: res.ratio.compareVsR1, target: '-',
    })] : []),
    row(n, label, 'delivery p50/p99 at max rate', { service: ms(svcMax), baseline: `R1 ${ms(r1Max)}`, target: '-' }),
    row(n, label, `server CPU per message at ${res.commonRate} msg/s (us)`, {
      service: fmt(res.atCommonRate.service?.serverCpuPerMessageUs),
      baseline: `R1 ${fmt(res.atCommonRate.R1?.serverCpuPerMessageUs)}, R2 ${fmt(res.atCommonRate.R2?.serverCpuPerMessageUs)}${res.atCommonRate.R3 ? `, R3 ${fmt(res.atCommonRate.R3.serverCpuPerMessageUs)}` : ''}${res.atCommonRate.compare ? `, compare ${fmt(res.atCommonRate.compare.serverCpuPerMessageUs)}` : ''}`,
      ratio: res.atCommonRate.service?.serverCpuPerMessageUs && res.atCommonRate.R1?.serverCpuPerMessageUs
        ? res.atCommonRate.R1.serverCpuPerMessageUs / res.atCommonRate.service.serverCpuPerMessageUs
        : null,
      target: '-',
    }),
    row(n, label, `delivery p50/p99 at ${res.commonRate} msg/s`, {
      service: ms(res.atCommonRate.service),
      baseline: `R1 ${ms(res.atCommonRate.R1)}`,
      ratio: res.atCommonRate.service && res.atCommonRate.R1?.delivery.p50 ? res.atCommonRate.service.delivery.p50 / res.atCommonRate.R1.delivery.p50 : null,
      target: '-',
    }),
  ];
}

function sendersRows(res) {
  const label = 'one room, 1-2 senders';
  if (!res?.shapes) return [unavailable(13, label, res, '>= 0.8 x R1')];
  const ms = (step) => (step ? `${fmt(step.delivery.p50, 1)}/${fmt(step.delivery.p99, 1)} ms` : '-');
  return res.shapes.flatMap((s) => [
    row(13, s.label, 'max msg/s, p99 ack < 50 ms, no loss', {
      service: fmt(s.maxRate.service), baseline: `R1 ${fmt(s.maxRate.R1)}`, ratio: s.ratio, target: '>= 0.8 x R1', met: s.ratio !== null && s.ratio >= 0.8,
    }),
    row(13, s.label, `delivery p50/p99 at ${s.moderateRate} msg/s`, {
      service: ms(s.atModerateRate.service), baseline: `R1 ${ms(s.atModerateRate.R1)}`, ratio: s.deliveryP50Ratio, target: '<= 2 x R1 (p50)',
      met: s.deliveryP50Ratio !== null && s.deliveryP50Ratio <= 2,
    }),
  ]);
}

/** Scenarios 20-24 (docs/benchmarks.md): mentions and replies in rooms of 10, the attention inbox, activity, tasks. */
function conversationRows(results) {
  const rows = [];
  if ('rooms10-mentions' in results) {
    const res = results['rooms10-mentions'];
    const label = 'rooms of 10, mentions and replies on 10 %';
    const talk = res.conversation;
    if (!talk || talk.maxRate === null || res.maxRate?.service === null || res.maxRate?.service === undefined) rows.push(unavailable(20, label, res, '>= 0.9 x without'));
    else {
      rows.push(row(20, label, 'max msg/s, p99 ack < 50 ms, no loss', {
        service: fmt(talk.maxRate),
        baseline: `without ${fmt(res.maxRate.service)}, R1 ${fmt(res.maxRate.R1)}`,
        ratio: talk.ofServiceRatio,
        target: '>= 0.9 x without',
        met: talk.ofServiceRatio !== null && talk.ofServiceRatio >= 0.9,
        note: `${r2(talk.ratioVsR1)} x R1 (without: ${r2(res.ratio.vsR1)})`,
      }));
    }
  }
  if ('attention-inbox' in results) {
    const a = results['attention-inbox'];
    const label = `attention inbox, ${a.waiters ?? '-'} waiting`;
    if (a.wake) {
      rows.push(row(21, label, `wake p99 of the ${a.mentioned} mentioned (ms)`, {
        service: fmt(a.wake.p99, 1), baseline: '-', target: '< 50 ms', met: a.wake.p99 !== null && a.wake.p99 < 50 && a.notWoken === 0,
        note: `${a.woken} woken, ${a.notWoken} not`,
      }));
      rows.push(row(21, label, 'spurious wake-ups', { service: fmt(a.spuriousWakeups), baseline: '-', target: '0', met: a.spuriousWakeups === 0 }));
    } else rows.push(unavailable(21, 'attention inbox', a, '< 50 ms, 0 spurious'));
  }
  if ('activity' in results) {
    const a = results.activity;
    const label = `activity, ${a.agents ?? '-'} agents typing`;
    if (a.cpuPercent !== undefined && a.cpuPercent !== null) {
      rows.push(row(22, label, `server CPU over ${a.windowSeconds} s (% of a core)`, {
        service: fmt(a.cpuPercent, 2), baseline: `quiet ${fmt(a.quietCpuPercent, 2)}`, target: '< 5 %', met: a.meetsTarget,
        note: `${a.setsPerSecond} sets/s, ${a.updatesPerSecond} updates/s received, ${a.refused} refused; as many message:send/s instead: ${fmt(a.messageCpuPercent, 2)} %; R1 relaying as many events: ${fmt(a.r1CpuPercent, 2)} % (the transport's floor)`,
      }));
    } else rows.push(unavailable(22, 'activity', a, '< 5 %'));
  }
  if ('tasks' in results) {
    const t = results.tasks;
    const label = 'task round trip';
    if (t.task && t.send) {
      rows.push(row(23, label, 'p50 (ms) against a message:send round trip', {
        service: fmt(t.task.p50, 2), baseline: `send ${fmt(t.send.p50, 2)}`, ratio: t.ratio, target: '<= 3 x send', met: t.meetsTarget,
        note: t.floor ? `the floor (the same shape in plain messages) ${fmt(t.floor.p50, 2)} ms: ${r2(t.floorToSend)} x send; task ${r2(t.taskToFloor)} x floor` : null,
      }));
      if (t.floor) {
        rows.push(row(23, label, '... against its floor (three REST message writes, a socket hop, a held inbox read)', {
          service: fmt(t.task.p50, 2), baseline: `floor ${fmt(t.floor.p50, 2)}`, ratio: t.taskToFloor, target: '-',
        }));
      }
    } else rows.push(unavailable(23, label, t, '<= 3 x send'));
  }
  if ('task-waiters' in results) {
    const w = results['task-waiters'];
    const label = `task waiters, ${w.waiters ?? '-'} waiting`;
    if (w.wake) {
      rows.push(row(24, label, 'wake p99 of the assignee (ms)', {
        service: fmt(w.wake.p99, 1), baseline: '-', target: '< 50 ms', met: w.wake.p99 !== null && w.wake.p99 < 50 && w.notWoken === 0,
        note: `${w.woken} woken, ${w.notWoken} not`,
      }));
      rows.push(row(24, label, 'spurious wake-ups', { service: fmt(w.spuriousWakeups), baseline: '-', target: '0', met: w.spuriousWakeups === 0 }));
      rows.push(row(24, label, 'KB RSS per held request', {
        service: fmt(w.memory.tasks.kbPerWaiter, 1), baseline: `inbox ${fmt(w.memory.inbox.kbPerWaiter, 1)}`, ratio: w.memory.rssRatio, target: 'reported',
        note: `JS heap ${fmt(w.memory.tasks.heapKbPerWaiter, 1)} KB (inbox ${fmt(w.memory.inbox.heapKbPerWaiter, 1)})`,
      }));
    } else rows.push(unavailable(24, 'task waiters', w, '< 50 ms, 0 spurious'));
  }
  if ('a2a' in results) {
    const a = results.a2a;
    if (a.rest && a.a2a) {
      rows.push(row(25, 'A2A SendMessage (until submitted)', 'tasks created per second', {
        service: fmt(a.a2a.rps), baseline: `REST ${fmt(a.rest.rps)}`, ratio: a.ratio, target: '>= 0.6 x REST', met: a.meetsTarget,
        note: `CPU ${fmt(a.a2a.cpuMsPerRequest, 3)} vs ${fmt(a.rest.cpuMsPerRequest, 3)} ms/request; the SDK's ceiling: bare A2A ${fmt(a.bare.a2a.rps)} vs bare REST ${fmt(a.bare.rest.rps)} req/s (${fmt(a.bare.ratio, 2)} x)`,
      }));
    } else rows.push(unavailable(25, 'A2A SendMessage', a, '>= 0.6 x REST'));
  }
  return rows;
}

export function summaryRows(results) {
  const rows = [];
  if ('rooms10' in results) rows.push(...roomsRows(1, 'rooms of 10', results.rooms10, 0.8));
  if ('rooms100' in results) rows.push(...roomsRows(2, 'rooms of 100', results.rooms100, 0.9));
  if ('rooms10-webhooks' in results) {
    const res = results['rooms10-webhooks'];
    const label = 'rooms of 10, 10 webhook endpoints';
    const hooks = res.webhooks;
    if (!hooks || hooks.maxRate === null || res.maxRate?.service === null || res.maxRate?.service === undefined) rows.push(unavailable(14, label, res, '>= 0.9 x without'));
    else {
      rows.push(row(14, label, `max msg/s (mode ${hooks.mode}), p99 ack < 50 ms, no loss`, {
        service: fmt(hooks.maxRate),
        baseline: `without ${fmt(res.maxRate.service)}, R1 ${fmt(res.maxRate.R1)}`,
        ratio: hooks.ofServiceRatio,
        target: '>= 0.9 x without',
        met: hooks.ofServiceRatio !== null && hooks.ofServiceRatio >= 0.9,
        note: `${r2(hooks.ratioVsR1)} x R1 (without: ${r2(res.ratio.vsR1)}); ${hooks.deliveriesReceived} deliveries received`,
      }));
    }
  }

  if ('rooms10-data' in results) {
    const res = results['rooms10-data'];
    const label = 'rooms of 10, data of 1 KiB on every message';
    const data = res.data;
    if (!data || data.maxRate === null || res.maxRate?.service === null || res.maxRate?.service === undefined) rows.push(unavailable(18, label, res, '>= 0.85 x without'));
    else {
      rows.push(row(18, label, 'max msg/s, p99 ack < 50 ms, no loss', {
        service: fmt(data.maxRate),
        baseline: `without ${fmt(res.maxRate.service)}, R1 ${fmt(res.maxRate.R1)}`,
        ratio: data.ofServiceRatio,
        target: '>= 0.85 x without',
        met: data.ofServiceRatio !== null && data.ofServiceRatio >= 0.85,
        note: `${r2(data.ratioVsR1)} x R1 (without: ${r2(res.ratio.vsR1)}); R1 with the same data ${r2(data.r1Ratio)} x R1 without (the transport's ceiling)`,
      }));
    }
  }

  if ('webhooks-fairness' in results) {
    const f = results['webhooks-fairness'];
    if (!f.withSilent) rows.push(unavailable(15, 'webhook fairness, endpoints that never answer', f, '< 2000 ms'));
    else {
      for (const w of f.withSilent) {
        rows.push(row(15, `webhook fairness, ${w.silentEndpoints} endpoints never answer`, `healthy endpoint's delivery p99 (ms) at ${f.rate} msg/s`, {
          service: fmt(w.delivery.p99, 1),
          baseline: `without them ${fmt(f.baseline.delivery.p99, 1)}`,
          ratio: f.baseline.delivery.p99 ? w.delivery.p99 / f.baseline.delivery.p99 : null,
          target: `< ${f.targetP99Ms} ms`,
          met: w.lost === 0 && w.delivery.p99 !== null && w.delivery.p99 < f.targetP99Ms,
          note: `p50 ${fmt(w.delivery.p50, 1)} ms (without ${fmt(f.baseline.delivery.p50, 1)}); ${w.lost} lost of ${w.sent}; send answer p99 ${fmt(w.send.p99, 1)} ms (without ${fmt(f.baseline.send.p99, 1)})`,
        }));
      }
    }
  }

  if ('history' in results) {
    const h = results.history;
    if (h.service) {
      rows.push(row(3, 'history pages of 50', 'req/s', { service: fmt(h.service.rps), baseline: `bare ${fmt(h.bare.rps)}`, ratio: h.ratio, target: '>= 0.7 x bare', met: h.ratio >= 0.7 }));
      rows.push(row(3, 'history pages of 50', 'p99 latency (ms)', { service: fmt(h.service.p99, 1), baseline: `bare ${fmt(h.bare.p99, 1)}`, target: '-' }));
    } else rows.push(unavailable(3, 'history pages of 50', h, '>= 0.7 x bare'));
  }

  if ('sessions' in results) {
    const s = results.sessions;
    if (s.service) {
      rows.push(row(4, 'sessions storm', 'exchanges/s', { service: fmt(s.service.perSecond, 1), baseline: `argon2 ${fmt(s.argon2.perSecond, 1)}/s`, ratio: s.ratio, target: '>= 0.9 x argon2', met: s.ratio >= 0.9 }));
      if (s.bareRoute) {
        rows.push(row(4, 'sessions storm', 'ceiling: bare Fastify route, same gate', {
          service: fmt(s.bareRoute.perSecond, 1), baseline: `argon2 ${fmt(s.argon2.perSecond, 1)}/s`, ratio: s.bareRoute.ratioToArgon2, target: '-',
        }));
        rows.push(row(4, 'sessions storm', 'exchanges/s against that ceiling', {
          service: fmt(s.service.perSecond, 1), baseline: `bare ${fmt(s.bareRoute.perSecond, 1)}/s`, ratio: s.ratioToBareRoute, target: '-',
        }));
      }
      if (s.compare) {
        rows.push(row(4, 'sessions storm', '... the build of --compare-dist', {
          service: fmt(s.compare.perSecond, 1), baseline: `argon2 ${fmt(s.argon2.perSecond, 1)}/s`, ratio: s.compare.ratio, target: '-',
        }));
      }
      rows.push(row(4, 'sessions storm', '/healthz p99 during storm (ms)', { service: fmt(s.healthz.p99, 1), baseline: '-', target: '< 20 ms', met: s.healthz.p99 !== null && s.healthz.p99 < 20 }));
    } else rows.push(unavailable(4, 'sessions storm', s, '>= 0.9 x argon2'));
  }

  if ('memory' in results) {
    const m = results.memory;
    if (m.service) {
      rows.push(row(5, 'idle WS connections', `KB per connection at ${m.connections}`, {
        service: fmt(m.service.kbPerConnection, 1),
        baseline: m.R1 ? `R1 ${fmt(m.R1.kbPerConnection, 1)}` : '-',
        ratio: m.R1 ? m.service.kbPerConnection / m.R1.kbPerConnection : null,
        target: '<= 30 KB',
        met: m.service.kbPerConnection <= 30,
      }));
    } else rows.push(unavailable(5, 'idle WS connections', m, '<= 30 KB'));
  }

  if ('idle' in results) {
    const d = results.idle;
    const label = 'idle WS at the file limit';
    if (d.service && d.R1) {
      const s = d.service;
      const n = d.connections;
      rows.push(row(17, label, `KB per connection at ${n}`, {
        service: fmt(s.kbPerConnection, 1), baseline: `R1 ${fmt(d.R1.kbPerConnection, 1)}`, ratio: d.targets.kbRatio,
        target: '<= 1.0 x R1', met: d.targets.kbMet, note: `RSS ${fmt(s.rssStartMiB)} -> ${fmt(s.rssHeldMiB)} MiB`,
      }));
      rows.push(row(17, label, `hello-ack p99 in a ${d.handshakeRate}/s storm (ms)`, {
        service: fmt(s.helloAck.p99, 1), baseline: `R1 ${fmt(d.R1.helloAck.p99, 1)}`, target: '< 1000 ms', met: d.targets.helloAckMet,
        note: `all connected in ${fmt(s.connectSeconds, 1)} s (R1 ${fmt(d.R1.connectSeconds, 1)} s), ${s.failures} failed, generator lateness p99 ${fmt(s.openLag.p99, 1)} ms`,
      }));
      rows.push(row(17, label, `idle CPU over ${d.idleSeconds} s (% of a core)`, {
        service: fmt(s.idleCpu * 100, 1), baseline: `R1 ${fmt(d.R1.idleCpu * 100, 1)}`, target: '< 5 %', met: d.targets.idleCpuMet,
      }));
      const r3 = d.R3;
      rows.push(row(17, label, 'rooms of 10, 2 senders, 4,000 msg/s while held: ack p99 (ms)', {
        service: fmt(s.step.ack.p99, 1), baseline: r3 ? `R3 ${fmt(r3.stepHeld.ack.p99, 1)}` : '-', target: '< 50 ms, no loss', met: d.targets.stepMet,
        note: `delivery p99 ${fmt(s.step.delivery.p99, 1)} ms, lost ${s.step.lost}, server CPU ${fmt(s.step.serverCpu, 2)}`
          + (r3 ? `; R3 (the ceiling) while ${r3.connected} held: ${r3.stepHeld.pass ? 'passes' : 'fails'}, CPU ${fmt(r3.stepHeld.serverCpu, 2)}; alone: ack p99 ${fmt(r3.stepAlone.ack.p99, 1)} ms, CPU ${fmt(r3.stepAlone.serverCpu, 2)}` : ''),
      }));
      rows.push(row(17, label, 'all disconnected: RSS vs start, still online', {
        service: `${fmt(s.rssEndRatio, 2)} x, ${s.onlineAfterClose}`, baseline: d.R1.rssEndRatio === undefined ? '-' : `R1 ${fmt(d.R1.rssEndRatio, 2)} x`,
        target: '<= 1.1 x, 0', met: d.targets.memoryBackMet && d.targets.offlineMet,
        note: `offline in ${fmt(s.offlineSeconds, 1)} s; after a forced full GC ${fmt(s.rssAfterGcRatio, 2)} x`
          + (d.R1.rssAfterGcRatio === undefined ? '' : ` (R1 ${fmt(d.R1.rssAfterGcRatio, 2)} x)`),
      }));
    } else rows.push(unavailable(17, label, d, '<= 1.0 x R1'));
  }

  if ('fanout' in results) {
    const f = results.fanout;
    if (f.perMessageUs) {
      const worst = Math.max(f.netRatioB, f.netRatioC);
      rows.push(row(26, 'fan-out follows members', 'CPU per message of nodes B, C (idle removed) / node A', {
        service: `sharded ${fmt(f.netRatioB * 100, 1)} % / ${fmt(f.netRatioC * 100, 1)} %`,
        baseline: f.classic?.perMessageUs ? `classic ${fmt(f.classic.netRatioB * 100, 1)} % / ${fmt(f.classic.netRatioC * 100, 1)} %` : '-',
        ratio: worst,
        target: '<= 5 %',
        met: worst <= f.target,
      }));
    } else rows.push(unavailable(26, 'fan-out follows members', f, '<= 5 %'));
  }

  if ('spread' in results) {
    const s = results.spread;
    if (s.one) {
      rows.push(row(27, 'two nodes cost little more than one', 'total CPU per message (nodes, Redis, PostgreSQL), us', {
        service: `two ${s.two.totalUs}`, baseline: `one ${s.one.totalUs}`, ratio: s.cpuRatio, target: '<= 1.5 x', met: s.cpuRatio <= s.target,
        note: `delivery p50 ${fmt(s.two.deliveryP50, 2)} vs ${fmt(s.one.deliveryP50, 2)} ms (${fmt(s.deliveryRatio, 2)} x, <= 1.5 x)${s.sustained ? '' : '; NOT SUSTAINED'}`,
      }));
    } else rows.push(unavailable(27, 'two nodes cost little more than one', s, '<= 1.5 x'));
  }

  if ('cluster' in results) {
    const c = results.cluster;
    if (c.crossNode) {
      rows.push(row(6, 'two nodes + Redis', 'delivery p50 cross-node vs single (ms)', {
        service: `${fmt(c.crossNode.p50, 2)} (p99 ${fmt(c.crossNode.p99, 1)})`,
        baseline: `single ${fmt(c.singleNode.p50, 2)} (p99 ${fmt(c.singleNode.p99, 1)})`,
        ratio: c.ratio,
        target: '<= 1.5 x single',
        met: c.ratio <= 1.5,
      }));
      if (c.high) {
        rows.push(row(6, 'two nodes + Redis', `delivery p50 at ${c.high.rate} msg/s cross-node vs single (ms)`, {
          service: `${fmt(c.high.crossNode.p50, 2)} (p99 ${fmt(c.high.crossNode.p99, 1)})`,
          baseline: `single ${fmt(c.high.singleNode.p50, 2)} (p99 ${fmt(c.high.singleNode.p99, 1)})`,
          ratio: c.high.ratio,
          target: '<= 1.5 x single',
          met: c.high.sustained && c.high.ratio <= 1.5,
          note: `p99 ${fmt(c.high.ratioP99, 2)} x single${c.high.sustained ? '' : '; not sustained'}`,
        }));
      }
    } else rows.push(unavailable(6, 'two nodes + Redis', c, '<= 1.5 x single'));
  }

  if ('hostile' in results) {
    const h = results.hostile;
    if (h.healthz) {
      rows.push(row(7, 'hostile bodies', '/healthz p99 during the storm (ms)', {
        service: fmt(h.healthz.p99, 1),
        baseline: '-',
        target: '< 50 ms',
        met: h.healthz.p99 !== null && h.healthz.p99 < 50,
        note: `${h.nestedMiB.requests + h.deepSmall.requests} refused, ${fmt(h.serverCpuPerRequestMs, 2)} ms CPU each`,
      }));
    } else rows.push(unavailable(7, 'hostile bodies', h, '< 50 ms'));
  }

  if ('search' in results) {
    const s = results.search;
    if (s.twoWords) {
      const label = `search, ${s.messages} msgs`;
      rows.push(row(8, label, 'two-word query p99, one at a time (ms)', {
        service: fmt(s.twoWords.p99, 1), baseline: s.history ? `history page ${fmt(s.history.p99, 1)}` : '-',
        ratio: s.history ? s.twoWords.p99 / s.history.p99 : null, target: '< 50 ms', met: s.twoWords.p99 < 50,
        note: `p50 ${fmt(s.twoWords.p50, 1)} ms, ${fmt(s.twoWords.rps)} req/s`,
      }));
      rows.push(row(8, label, 'two-word query, 8 connections: req/s (p99 ms)', { service: `${fmt(s.twoWordsConcurrent.rps)} (${fmt(s.twoWordsConcurrent.p99, 1)})`, baseline: '-', target: '-' }));
      rows.push(row(8, label, 'prefix query p99, one at a time (ms)', { service: fmt(s.prefix.p99, 1), baseline: '-', target: '-', note: `"${s.prefixQuery}"` }));
      const pg = s.postgres;
      if (pg?.twoWords) {
        rows.push(row(8, `${label}, PostgreSQL`, 'two-word query p99, one at a time (ms)', {
          service: fmt(pg.twoWords.p99, 1), baseline: `history page ${fmt(pg.history.p99, 1)}`, ratio: pg.twoWords.p99 / pg.history.p99, target: 'reported',
          note: `p50 ${fmt(pg.twoWords.p50, 1)} ms, ${fmt(pg.twoWords.rps)} req/s; 8 connections ${fmt(pg.twoWordsConcurrent.rps)} req/s; prefix p99 ${fmt(pg.prefix.p99, 1)} ms`,
        }));
      } else rows.push(unavailable(8, 'message search, PostgreSQL', pg ?? { error: 'not run' }, 'reported'));
    } else rows.push(unavailable(8, 'message search', s, '< 50 ms'));
  }

  if ('catchup' in results) {
    const c = results.catchup;
    if (c.service) {
      rows.push(row(9, `catch-up, ${c.messages} msgs`, `room:sync replay msg/s (pages of ${c.pageSize})`, {
        service: fmt(c.service.perSecond), baseline: `bare ${fmt(c.bare.perSecond)}`, ratio: c.ratio, target: '>= 0.5 x bare', met: c.ratio >= 0.5,
        note: `server CPU ${fmt(c.service.serverCpuUsPerMessage)} us/msg (bare ${fmt(c.bare.serverCpuUsPerMessage)})`,
      }));
    } else rows.push(unavailable(9, 'catch-up (room:sync)', c, '>= 0.5 x bare'));
  }

  if ('inbox' in results) {
    const i = results.inbox;
    if (i.wake) {
      const label = `inbox, ${i.waiters} waiting`;
      rows.push(row(10, label, 'wake p99, send start to response (ms)', {
        service: fmt(i.wake.p99, 1), baseline: '-', target: '< 50 ms', met: i.wake.p99 !== null && i.wake.p99 < 50,
        note: `p50 ${fmt(i.wake.p50, 1)} ms over ${i.wake.count} woken (${i.sends} sends to rooms of ${i.roomSize}); slowest wake per send: median ${fmt([...i.wake.perSendMaxMs].sort((a, b) => a - b)[Math.floor((i.wake.perSendMaxMs.length - 1) / 2)], 1)} ms, max ${fmt(Math.max(...i.wake.perSendMaxMs), 1)} ms`,
      }));
      rows.push(row(10, label, 'memory per held request (KB, RSS)', {
        service: fmt(i.memory.kbPerWaiter, 1), baseline: i.memory.bare ? `bare node:http ${fmt(i.memory.bare.kbPerWaiter, 1)}` : '-',
        ratio: i.memory.bare ? Math.round((i.memory.kbPerWaiter / i.memory.bare.kbPerWaiter) * 100) / 100 : undefined,
        target: '< 10 KB', met: i.memory.kbPerWaiter < 10,
        note: `JS heap ${fmt(i.memory.heapKbPerWaiter, 1)} KB per held request${i.memory.bare ? ` (bare ${fmt(i.memory.bare.heapKbPerWaiter, 1)} KB)` : ''}`,
      }));
      rows.push(row(10, label, 'server CPU while they wait (% of a core)', {
        service: fmt(i.idleCpuPercent, 2), baseline: `no waiters ${fmt(i.noWaiterCpuPercent, 2)}`, target: '< 2 %', met: i.idleCpuPercent !== null && i.idleCpuPercent < 2,
      }));
    } else rows.push(unavailable(10, 'inbox long-poll', i, '< 50 ms, < 10 KB, < 2 %'));
  }

  if ('files' in results) {
    const f = results.files;
    for (const engine of ['sqlite', 'postgres']) {
      const e = f[engine];
      const label = `10 MiB file, ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`;
      if (!e || e.error || !e.upload) {
        rows.push(unavailable(19, label, e ?? f, '>= 0.7 x bare'));
        continue;
      }
      for (const op of ['upload', 'download']) {
        rows.push(row(19, label, `${op} MiB/s`, {
          service: fmt(e[op].service, 1), baseline: `bare ${fmt(e[op].bare, 1)}`, ratio: e[op].ratio, target: '>= 0.7 x bare', met: e[op].ratio >= 0.7,
        }));
      }
      rows.push(row(19, label, 'RSS growth, 10 concurrent uploads (MiB)', {
        service: fmt(e.concurrent.rssGrowthMiB, 1), baseline: `bare ${fmt(e.concurrent.bare?.rssGrowthMiB, 1)}`, target: 'reported',
        note: `RSS before: service ${fmt(e.concurrent.rssBeforeMiB)} MiB, bare ${fmt(e.concurrent.bare?.rssBeforeMiB)} MiB`,
      }));
    }
  }

  if ('mcp' in results) {
    const m = results.mcp;
    if (m.send) {
      for (const [op, label] of [['send', 'send_message'], ['read', 'read_messages (20)']]) {
        rows.push(row(11, `MCP ${label}`, 'calls/s', {
          service: fmt(m[op].mcp.rps), baseline: `REST ${fmt(m[op].rest.rps)}`, ratio: m[op].ratio, target: '>= 0.7 x REST', met: m[op].ratio >= 0.7,
          note: `p99 ${fmt(m[op].mcp.p99, 1)} vs ${fmt(m[op].rest.p99, 1)} ms; CPU ${fmt(m[op].mcp.cpuMsPerRequest, 3)} vs ${fmt(m[op].rest.cpuMsPerRequest, 3)} ms/call`,
        }));
        const bare = m[op].bare;
        if (bare) {
          // What the SDK adds to a call (same answer, nothing else), added to the service's REST call:
          // the best CPU ratio the service could reach if its own MCP work cost nothing.
          const sdkExtra = bare.mcp.cpuMsPerRequest - bare.rest.cpuMsPerRequest;
          const bound = m[op].rest.cpuMsPerRequest / (m[op].rest.cpuMsPerRequest + sdkExtra);
          rows.push(row(11, `MCP ${label}`, 'ceiling: bare SDK transport, calls/s', {
            service: fmt(bare.mcp.rps), baseline: `bare REST ${fmt(bare.rest.rps)}`, ratio: bare.ratio, target: 'reported',
            note: `fixed answers, no auth, no database; CPU ${fmt(bare.mcp.cpuMsPerRequest, 3)} vs ${fmt(bare.rest.cpuMsPerRequest, 3)} ms/call: the SDK adds ${fmt(sdkExtra, 3)} ms; `
              + `service REST + that: CPU ratio at most ${fmt(bound, 2)} (service ${fmt(m[op].rest.cpuMsPerRequest / m[op].mcp.cpuMsPerRequest, 2)})`,
          }));
        }
      }
    } else rows.push(unavailable(11, 'MCP tool calls', m, '>= 0.7 x REST'));
  }

  if ('busydisk' in results) {
    const d = results.busydisk;
    if (d.busy) {
      const label = `busy disk, ${d.rate} msg/s`;
      rows.push(row(12, label, 'event-loop delay p99, dd writing / quiet (ms)', {
        service: fmt(d.busy.eventLoopDelay.p99, 1), baseline: `quiet ${fmt(d.quiet.eventLoopDelay.p99, 1)}`, target: '< 20 ms',
        met: d.busy.eventLoopDelay.p99 !== null && d.busy.eventLoopDelay.p99 < 20, note: `max ${fmt(d.busy.eventLoopDelay.max, 1)} ms (quiet ${fmt(d.quiet.eventLoopDelay.max, 1)})`,
      }));
      rows.push(row(12, label, '/healthz p99, dd writing / quiet (ms)', { service: fmt(d.busy.healthz.p99, 1), baseline: `quiet ${fmt(d.quiet.healthz.p99, 1)}`, target: '-' }));
      rows.push(row(12, label, 'ack p50/p99, dd writing / quiet (ms)', {
        service: `${fmt(d.busy.ack.p50, 1)}/${fmt(d.busy.ack.p99, 1)}`, baseline: `quiet ${fmt(d.quiet.ack.p50, 1)}/${fmt(d.quiet.ack.p99, 1)}`, target: '-',
      }));
    } else rows.push(unavailable(12, 'busy disk', d, '< 20 ms'));
  }
  if ('senders' in results) rows.push(...sendersRows(results.senders));
  if ('pgsend' in results) rows.push(...pgSendRows(results.pgsend));
  rows.push(...conversationRows(results));
  return rows;
}

/** The send path on PostgreSQL against R3 on PostgreSQL and the SQLite default (scenarios/pgsend.js). */
function pgSendRows(res) {
  if (!res?.shapes) return [unavailable(15, 'PostgreSQL send path', res, '>= 0.8 x R3-pg')];
  const ms = (step) => (step ? `${fmt(step.delivery.p50, 2)} ms` : '-');
  return res.shapes.flatMap((s) => [
    row(15, `PostgreSQL, ${s.label}`, 'max msg/s, p99 ack < 50 ms, no loss', {
      service: fmt(s.maxRate['svc-pg']), baseline: `R3-pg ${fmt(s.maxRate['R3-pg'])}`, ratio: s.ratio.vsR3pg, target: '>= 0.8 x R3-pg',
      met: s.ratio.vsR3pg !== null && s.ratio.vsR3pg >= 0.8,
      note: s.ratio.vsCompare !== undefined ? `${fmt(s.ratio.vsCompare, 2)} x --compare-dist (${fmt(s.maxRate['compare-pg'])})` : null,
    }),
    row(15, `PostgreSQL, ${s.label}`, '... against the SQLite default', {
      service: fmt(s.maxRate['svc-pg']), baseline: `SQLite ${fmt(s.maxRate['svc-sqlite'])}`, ratio: s.ratio.vsSqlite, target: '>= 0.5 x SQLite',
      met: s.ratio.vsSqlite !== null && s.ratio.vsSqlite >= 0.5,
    }),
    ...(s.atLatencyRate ? [row(15, `PostgreSQL, ${s.label}`, `delivery p50 at ${res.latencyRate} msg/s`, {
      service: ms(s.atLatencyRate['svc-pg']), baseline: `R1 ${ms(s.atLatencyRate.R1)}`, ratio: s.ratio.deliveryP50VsR1, target: '<= 3 x R1',
      met: s.ratio.deliveryP50VsR1 !== null && s.ratio.deliveryP50VsR1 <= 3,
      note: `R3-pg ${ms(s.atLatencyRate['R3-pg'])}, SQLite ${ms(s.atLatencyRate['svc-sqlite'])}; fsync ${res.fsyncUs === null ? '?' : fmt(res.fsyncUs / 1000, 2)} ms`,
    })] : []),
    // Two nodes (both sending), reported: on the bench's machine they share the server's one core.
    ...(s.ratio.twoNodesVsOne !== undefined ? [row(15, `PostgreSQL, ${s.label}, two nodes`, 'max msg/s, p99 ack < 50 ms, no loss', {
      service: fmt(s.maxRate['pg-2nodes']), baseline: `one node ${fmt(s.maxRate['svc-pg'])}`, ratio: s.ratio.twoNodesVsOne, target: 'reported', met: null,
      note: s.atLatencyRate?.['pg-2nodes'] ? `delivery p50 at ${res.latencyRate} msg/s ${ms(s.atLatencyRate['pg-2nodes'])}` : null,
    })] : []),
  ]);
}

export function printTable(rows) {
  const header = ['#', 'scenario', 'metric', 'service', 'baseline', 'ratio', 'target', 'met'];
  const cells = rows.map((r) => [
    String(r.n),
    r.scenario,
    r.metric,
    String(r.service),
    String(r.baseline),
    r.ratio === null ? '-' : r.ratio.toFixed(2),
    r.target,
    r.met === null ? (r.note && r.metric === '-' ? 'n/a' : '') : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => `| ${c.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const c of cells) console.log(line(c));
  for (const r of rows) if (r.note && r.metric === '-') console.log(`  [${r.n}] ${r.note}`);
  const notes = rows.filter((r) => r.note && r.metric !== '-');
  for (const r of notes) console.log(`  [${r.n}] ${r.metric}: ${r.note}`);
}
