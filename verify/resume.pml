/*
 * signoff's resume of a framework's paused run, as the code runs it: the pause a Resumer
 * claims with a lease, the thread's history appended only by compare-and-set on the length
 * read, and the mark a resuming process appends (and renews) so that one process at a time
 * continues the thread. Checked with Spin (`make verify`; issue 37); tests/verify/test_model.py
 * keeps the `@code` names and the states in step with the code.
 *
 * R resumers (Resumer workers on replicas, or the app calling `resume` itself) race for one
 * pause whose calls are decided. Any of them may stall past its leases (the pause's, the
 * mark's) or crash at any step. The property: the thread is continued at most once — one
 * resume's run is kept in the history, whatever the others did meanwhile.
 */

#ifndef R
#define R 2
#endif

mtype = { WAITING, RESUMING, DONE };  /* the pause (`Pause.status`) */

/* The store: each `atomic` block is one transaction. */
mtype pause = WAITING;
byte pause_owner = 0;      /* a resumer's number + 1 */
bool pause_live = false;   /* its lease has not run out */
byte length = 0;           /* the thread's history: how many entries */
byte marked_by = 0;        /* its last entry is a mark taken by this resumer + 1 (0: not a mark) */
bool mark_live = false;    /* that mark's `until` is still ahead */
bool waits = true;         /* the thread's last run waits on the decided calls */

/* The world. */
byte kept = 0;             /* resumed runs kept in the history */
byte model_calls = 0;      /* resumed runs that called the model */

proctype Resumer(byte me) {
  byte seen;      /* the history's length as read */
  byte mine;      /* the length this resumer's hold knows */
  byte tries = 0; /* bounded here; a Resumer polls on */

claim:  /* @code Resumer.resume_ready, ExternalStore.claim_pause */
  atomic {
    if
    :: pause == WAITING || (pause == RESUMING && !pause_live) ->
       pause = RESUMING; pause_owner = me + 1; pause_live = true
    :: else -> goto done  /* another worker has it, or it is done */
    fi
  };

read:  /* @code ExternalStore.history, busy */
  if
  :: atomic {
       seen = length;
       if
       :: !waits -> goto over                       /* nothing waits: went on already */
       :: marked_by != 0 && mark_live -> goto again  /* another process resumes it */
       :: else -> skip
       fi
     }
  :: goto crash
  fi;

take:  /* @code Hold.take: a mark appended after the length read */
  if
  :: atomic {
       if
       :: length == seen -> length++; marked_by = me + 1; mark_live = true; mine = length
       :: else -> goto again  /* extended since: another has it */
       fi
     }
  :: goto crash
  fi;

going:  /* the framework's run goes on: the model is called (a stalled process may lose its hold) */
  model_calls++;
  if
  :: atomic {  /* @code Hold._renew: a new mark, by compare-and-set */
       if
       :: length == mine -> length++; mine = length; mark_live = true
       :: else -> skip  /* lost: what it keeps will be refused */
       fi
     }
  :: skip
  :: goto crash
  fi;

keep:  /* @code Hold.keep, ExternalStore.append_history: the run's entries after its hold */
  if
  :: atomic {
       if
       :: length == mine -> length++; marked_by = 0; mark_live = false; waits = false;
                            kept++; assert(kept == 1)
       :: else -> goto again  /* @code ConflictError: not kept */
       fi
     }
  :: goto crash
  fi;

over:  /* @code ExternalStore.release_pause: done, if still this worker's */
  atomic {
    if
    :: pause_owner == me + 1 -> pause = DONE; pause_owner = 0; pause_live = false
    :: else -> skip
    fi
  };
  goto done;

again:  /* @code ExternalStore.release_pause: waiting, to be tried again */
  atomic {
    if
    :: pause_owner == me + 1 -> pause = WAITING; pause_owner = 0; pause_live = false
    :: else -> skip
    fi
  };
  if
  :: tries < 2 -> tries++; goto claim
  :: else -> goto done
  fi;

crash:
  skip;
done:
  skip
}

proctype Clock() {
  /* Leases run out: a holder stalled past them, or crashed. */
end:
  do
  :: atomic { pause == RESUMING && pause_live -> pause_live = false }
  :: atomic { marked_by != 0 && mark_live -> mark_live = false }
  od
}

init {
  byte i = 0;
  atomic {
    do
    :: i < R -> run Resumer(i); i++
    :: i == R -> break
    od;
    run Clock()
  }
}
