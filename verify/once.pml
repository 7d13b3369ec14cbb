/*
 * signoff's run-once protocol for one call of another framework's run, as the code runs it:
 * the verdict kept under the call's key, the approval a person decides, the ledger's claim
 * with its lease, renewals and fencing token, the result recorded by the claim's holder.
 * Checked with Spin (`make verify`; issue 37). tests/verify/test_model.py keeps it in step with
 * the code: every `@code` name below is a function of signoff, and the states are the code's.
 *
 * Workers are processes or replicas running the same call (a re-run node, a resumed copy of
 * a checkpoint, a forged resume payload): each judges it, waits for its decision, claims the
 * key, runs the tool, records the result — or crashes at any step, its claim left to run out.
 * A claim's lease may run out at any moment (a holder stalled past it looks dead), and any
 * transaction may abort (nothing of it written; the step is tried again, as the next run of
 * the node would). The policy may answer differently for each worker (changed meanwhile), and
 * a worker may propose other arguments under the same call id. One decider approves the held
 * call as asked, approves an edit of it, or rejects it. A holder renews its claim once here:
 * the lease may run out whatever it does, so more renewals add no behaviour to the safety
 * properties; for `ends` they would let a holder whose tool never returns keep the others
 * waiting, which `ends` assumes away (see docs/guarantees.md).
 *
 * The relaxed claim (issue 49): an idempotent call's claim, and every call's result, are commits
 * that do not wait for the disk. LOSS crashes of the machine or the database server lose what
 * was committed since the last commit that waited (a later durable commit, anyone's, makes the
 * earlier ones durable with it: the write-ahead log is one sequence). The workers may go on
 * (PostgreSQL's server crashed alone) or crash too. A non-idempotent call's claim waits for the
 * disk, so no crash frees its key: it still runs at most once.
 *
 * Bounds: W workers (2 or 3), ABORTS aborted transactions in all, IDEMPOTENT or not, LOSS
 * losses of what was not on the disk yet.
 */

#ifndef W
#define W 2
#endif
#ifndef IDEMPOTENT
#define IDEMPOTENT 0
#endif
#ifndef ABORTS
#define ABORTS 1
#endif
#ifndef LOSS
#define LOSS 1
#endif

#define ASKED 1   /* the arguments the model proposed (a digest) */
#define OTHER 2   /* other arguments under the same call id */
#define EDITED 3  /* a person's edit */

mtype = { NONE, RUN, HOLD, BLOCK };        /* the verdict kept under the key (`ExternalRecord.kind`) */
mtype = { NOAPP, PENDING, APPROVED, REJECTED };  /* the approval (`Approval.status`) */
mtype = { ABSENT, STARTED, FINISHED };     /* the ledger's entry (`LedgerClaim.status`) */

/* The store: each `atomic` block is one transaction. */
mtype verdict = NONE;
byte verdict_digest = 0;
mtype approval = NOAPP;
byte decided_digest = 0;     /* the call as approved: as asked, or edited */
mtype entry = ABSENT;
byte holder = 0;             /* the claim's owner: a worker's number + 1 */
byte fence = 0;              /* counts the key's claims */
bool lease_live = false;     /* the claim's lease has not run out */
byte result_by = 0;          /* whose result is recorded */
byte aborts = 0;

/* What the disk holds: the store as of the last commit that waited for it. */
mtype d_verdict = NONE;
byte d_verdict_digest = 0;
mtype d_entry = ABSENT;
byte d_holder = 0;
byte d_fence = 0;
bool d_lease_live = false;
byte d_result_by = 0;
byte losses = 0;

/* A commit that waits for the disk: it, and every commit before it, is on the disk. */
#define SYNC \
  d_verdict = verdict; d_verdict_digest = verdict_digest; d_entry = entry; d_holder = holder; \
  d_fence = fence; d_lease_live = lease_live; d_result_by = result_by

/* The world, which the store does not see. */
byte executions = 0;         /* real executions of the tool */
byte ran[W];                 /* by each worker */
byte ran_digest = 0;         /* the arguments it last ran with */
bool unknown = false;        /* recorded as unknown: it may have run, it is never run again */
bool answered = false;       /* a worker answered the model instead (blocked, rejected, refused) */
bool steady_done = false;    /* worker 0, which never crashes, is done */
bool let_through[4];         /* the arguments the store ever let run (a verdict, an approval) */

/* A transaction that may abort: nothing written, the caller tries again. */
#define may_abort(label) \
  if \
  :: aborts < ABORTS -> aborts++; goto label \
  :: true \
  fi

/* May this call (its arguments `d`) run under what the store holds? (@code ExternalRuns._permit) */
#define PERMITTED(d) ((verdict == RUN && verdict_digest == d) || \
                      (verdict == HOLD && approval == APPROVED && decided_digest == d))

proctype Worker(byte me) {
  byte proposed;            /* the arguments this worker holds for the call */
  byte running;             /* the arguments it runs: proposed, or a person's edit */
  mtype mine = NONE;        /* its verdict */
  bool unwritten = false;   /* judged to run, not written yet */
  byte myfence = 0;

  if
  :: proposed = ASKED
  :: proposed = OTHER
  fi;

judge:  /* @code Gate.hold: what was judged before is read; else the policy judges */
  if
  :: atomic {  /* @code SQLStore.external_verdicts (a read), then the policy allows */
       if
       :: verdict != NONE -> mine = verdict; unwritten = false
       :: else -> mine = RUN; unwritten = true
       fi
     }
  :: atomic {  /* @code SQLStore.hold: the policy asks or denies; the verdict written */
       may_abort(judge);
       if
       :: verdict != NONE -> skip  /* judged before by another: that verdict stands */
       :: else ->
          if
          :: verdict = HOLD; approval = PENDING
          :: verdict = BLOCK
          fi;
          verdict_digest = proposed
       fi;
       mine = verdict; unwritten = false;
       SYNC
     }
  :: me != 0 -> goto crash
  fi;
  /* A call id judged before with other arguments is blocked (@code Gate._judge). */
  if
  :: !unwritten && verdict_digest != proposed -> mine = BLOCK
  :: else -> skip
  fi;

step:  /* @code ExternalRuns.step */
  running = proposed;
  if
  :: mine == BLOCK -> answered = true; goto done
  :: mine == RUN -> skip
  :: mine == HOLD ->
     (approval != PENDING);  /* waits for the decision (a pause, resumed by a Resumer) */
     if
     :: approval == REJECTED -> answered = true; goto done
     :: approval == APPROVED && decided_digest == EDITED -> running = EDITED
     :: approval == APPROVED && decided_digest != EDITED -> skip
     fi
  :: me != 0 -> goto crash
  fi;

claim:  /* @code ExternalRuns.claim */
  if
  :: unwritten ->
     atomic {  /* @code ExternalStore.ledger_claim (judged=): the verdict written with the claim */
       may_abort(claim);
       if
       :: verdict == NONE -> verdict = RUN; verdict_digest = running; let_through[running] = true
       :: verdict == RUN && verdict_digest == running -> skip
       :: else -> unwritten = false; goto permit  /* @code JudgedOtherwise: rolled back */
       fi;
       unwritten = false;
       if  /* one transaction with the claim below: on the disk with it, or lost with it */
       :: !IDEMPOTENT -> SYNC
       :: else -> skip
       fi;
       goto take
     }
  :: !unwritten -> skip
  fi;

permit:  /* @code ExternalRuns._permit: refused (audited) unless let through */
  if
  :: !PERMITTED(running) -> answered = true; goto done
  :: else -> skip
  fi;

take:  /* @code Ledger.claim */
  atomic {  /* @code ExternalStore.ledger_claim */
    may_abort(take);
    if
    :: entry == ABSENT -> entry = STARTED; holder = me + 1; fence = 1; lease_live = true;
                          myfence = fence
    :: entry == STARTED && !lease_live && IDEMPOTENT ->
       holder = me + 1; fence++; lease_live = true; myfence = fence
    :: entry == FINISHED -> goto done          /* @code Recorded: its result, nothing run */
    :: entry == STARTED && !lease_live && !IDEMPOTENT ->
       unknown = true; goto done               /* @code record_unknown, OutcomeUnknown */
    :: entry == STARTED && lease_live -> goto take  /* a live worker has it: wait, poll */
    fi;
    /* The claim waits for the disk unless the call is idempotent (the relaxed claim). */
    if
    :: !IDEMPOTENT -> SYNC
    :: else -> skip
    fi
  };

execute:  /* the tool runs: only the call let through, never twice unless idempotent */
  if
  :: me != 0 -> goto crash
  :: atomic {
       assert(let_through[running]);
       assert(PERMITTED(running) || (IDEMPOTENT && losses > 0));
       executions++; ran[me]++; ran_digest = running;
       assert(IDEMPOTENT || executions == 1)
     }
  fi;

renew:  /* @code Claim._renew: fenced, a claim taken over is not renewed (once, here) */
  if
  :: atomic {
       if
       :: entry == STARTED && holder == me + 1 && fence == myfence -> lease_live = true
       :: else -> skip  /* lost: `Claim.lost` set */
       fi
     }
  :: skip
  :: me != 0 -> goto crash
  fi;

finish:  /* @code Claim._record, LedgerStore.ledger_finish (fenced) */
  atomic {
    may_abort(finish);
    if
    :: entry == STARTED && holder == me + 1 && fence == myfence ->
       /* Recorded by the claim that holds the key now, which ran the call: never by a
          holder fenced out meanwhile (an idempotent call taken over). */
       assert(holder == me + 1 && fence == myfence && ran[me] > 0);
       entry = FINISHED; result_by = me + 1; lease_live = false
    :: entry == ABSENT && IDEMPOTENT -> goto retake  /* its claim lost before the disk */
    :: else -> skip  /* @code ClaimLost: the new holder's result stands */
    fi
  };
  goto done;

retake:  /* @code ExternalRuns.finish: the key claimed again, to record what ran */
  atomic {
    may_abort(retake);
    if
    :: entry == ABSENT -> entry = STARTED; holder = me + 1; fence = 1; lease_live = true;
                          myfence = fence; goto finish
    :: entry == STARTED && !lease_live ->
       holder = me + 1; fence++; lease_live = true; myfence = fence; goto finish
    :: entry == FINISHED -> goto done          /* another's result stands */
    :: entry == STARTED && lease_live -> goto retake
    fi
  };

crash:
  skip;
done:
  if
  :: me == 0 -> steady_done = true
  :: else -> skip
  fi
}

proctype Decider() {
end:  /* nothing held: nothing to decide */
  (approval == PENDING);
  atomic {  /* @code Gate.decide */
    if
    :: approval = APPROVED; decided_digest = verdict_digest  /* @code Approve */
    :: approval = APPROVED; decided_digest = EDITED           /* @code Edit */
    :: approval = REJECTED                                    /* @code Reject */
    fi;
    if
    :: approval == APPROVED -> let_through[decided_digest] = true
    :: else -> skip
    fi;
    SYNC
  }
}

proctype Disk() {
  /* The machine or the database server crashes: what did not reach the disk is lost. */
end:
  do
  :: atomic {
       losses < LOSS ->
       losses++;
       verdict = d_verdict; verdict_digest = d_verdict_digest; entry = d_entry;
       holder = d_holder; fence = d_fence; lease_live = d_lease_live; result_by = d_result_by
     }
  od
}

proctype Clock() {
  /* A claim's lease runs out: its holder stalled past it, crashed, or its renewals were lost. */
end:
  do
  :: atomic { entry == STARTED && lease_live -> lease_live = false }
  od
}

init {
  byte i = 0;
  atomic {
    do
    :: i < W -> run Worker(i); i++
    :: i == W -> break
    od;
    run Decider();
    run Clock();
    run Disk()
  }
}

/* Worker 0 never crashes: under weak fairness (`pan -f`) it ends — the call run and its result
 * recorded, its recorded result read, recorded unknown, or the model answered instead — however
 * the others crash, stall or race it. */
ltl ends { <> steady_done }
