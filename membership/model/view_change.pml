/*
 * The native membership protocol's view change (docs/membership.md), as a
 * SPIN model: N processes in view e (members 0..N-1) agree on the members of
 * view e+1 after failures, by single-decree Paxos led by the lowest member
 * a process does not suspect, with quorums of view e's members (more than
 * half, or exactly half with the lowest member in it).
 *
 * What the model lets happen: any process may crash at any step (at most
 * MAXCRASH of them), any message between two processes may be lost (at most
 * MAXLOSS), messages are reordered freely (one channel per receiver, but a
 * message may wait in it while others are taken: see RECEIVE), and, with
 * ARBITRARY_SUSPICION, any process may suspect any other at any time, right
 * or wrong (a partition, a slow node). Without it a process suspects only a
 * crashed process, or one that did not answer before a timeout (Promela's
 * `timeout`: nothing else in the whole system can move), which is the
 * partially synchronous network the liveness claim needs.
 *
 * Checked (scripts: tests/model/check_membership_model.sh):
 *   agreement   no two processes decide or install different views e+1;
 *   validity    the view decided is a quorum of view e, and each of its
 *               members answered (promised) in this view change;
 *   fencing     a process installs a view only if it is a member of it; a
 *               process not in it that hears of it is fenced (exits); no
 *               process both installs and is fenced;
 *   termination (without ARBITRARY_SUSPICION) once nothing can move, every
 *               live process has installed view e+1 or been fenced, the
 *               view was decided, and nobody gave up, whenever the live
 *               processes are a quorum of view e.
 * Not covered: the next view change (each epoch's decision is a separate
 * instance; messages carry the epoch, so instances do not mix), joiners
 * (they enter the decided value as the coordinator's proposal, which the
 * model treats as any value), the data path (collectives carry the epoch;
 * see docs/membership.md for why a fenced process cannot complete one).
 */

#ifndef N
#define N 3
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
#ifndef MAXLOSS
#define MAXLOSS 1
#endif
#ifndef MAXFALSE
#define MAXFALSE 1
#endif
/* Ballots a process may lead before it gives up (the recovery timeout).
 * Each fault during the change can spoil one ballot; with fewer ballots
 * than faults plus one, a live quorum may give up (the model shows how). */
#ifndef MAXROUND
#define MAXROUND (MAXCRASH + MAXLOSS + MAXFALSE + 1)
#endif
#define QSIZE 8
#define ALL ((1 << N) - 1)
#define BIT(p) (1 << (p))
#define HAS(set, p) (((set) >> (p)) & 1)
/* every process below this one is suspected: it is the lowest trusted */
#define LOWEST_TRUSTED_IS_ME ((suspect & (BIT(me) - 1)) == (BIT(me) - 1))
/* process p's failure detector has not yet reported crashed process q */
#define CRASH_UNSEEN(p, q) ((q) < N && !alive[(q) % N] && !HAS(suspected[p], q))
#define CRASH_UNSEEN_BY(p) (CRASH_UNSEEN(p, 0) || CRASH_UNSEEN(p, 1) || CRASH_UNSEEN(p, 2) || CRASH_UNSEEN(p, 3))
#define crashed_unsuspected CRASH_UNSEEN_BY(me)
/* another process left view e (promised a ballot, or decided): the
 * collectives of view e stall at process i, whose data path says so */
#define STALLED(i) (((promised_set | installed_set | fenced_set) & ~BIT((i) % N)) != 0)
/* process i would act on a timeout */
#define BUSY(i) ((i) < N && (busy[(i) % N] || (alive[(i) % N] && mode[(i) % N] < INSTALLED && \
                                              (CRASH_UNSEEN_BY((i) % N) || STALLED(i)))))

/* modes of a process */
#define ACTIVE 0    /* in view e; maybe taking part in the change as an acceptor */
#define PREPARING 1 /* leading a ballot, phase 1: collecting promises */
#define ACCEPTING 2 /* leading a ballot, phase 2: collecting acceptances */
#define INSTALLED 3 /* in view e+1 */
#define FENCED 4    /* told it is not in view e+1: exits with an error */
#define GAVE_UP 5   /* no view within its rounds: exits with an error */

mtype = { SUSPECT, PREPARE, PROMISE, NACK, ACCEPT, ACCEPTED, COMMIT };

/* type, sender, ballot, accepted ballot (PROMISE) or 0, value (set of members) */
chan inbox[N] = [QSIZE] of { mtype, byte, byte, byte, byte };

bool alive[N];
byte mode[N];
byte crashes = 0, losses = 0, falses = 0;
byte decided = 0;        /* the value chosen for view e+1 (0: none yet) */
byte installed_set = 0;  /* who installed view e+1 */
byte fenced_set = 0;     /* who was fenced */
byte promised_set = 0;   /* who sent a PROMISE at least once */
bool busy[N];            /* would act on a timeout (used by the final check) */
byte suspected[N];       /* each process's failure detector output */
#define suspect suspected[me]

inline count_bits(set, c) {
  c = 0;
  j = 0;
  do
  :: j < N -> if :: HAS(set, j) -> c++ :: else -> skip fi; j++
  :: else -> break
  od
}

/* A quorum of view e = {0..N-1}: more than half, or exactly half with the
 * lowest member (0) in it. Any two quorums intersect. */
inline is_quorum(set, res) {
  count_bits(set, c);
#ifdef MUTANT_SMALL_QUORUM
  res = (c > 0)  /* wrong on purpose: quorums that need not intersect */
#else
  res = (2 * c > N) || (2 * c == N && HAS(set, 0))
#endif
}

/* A message to another process may be lost (a bounded number of times); one
 * to a dead process is dropped; one to itself always arrives. */
inline send(to, t, b, x, v) {
  if
  :: to == me -> inbox[to]!t, me, b, x, v
  :: to != me && !alive[to] -> skip
  :: to != me && alive[to] && losses < MAXLOSS -> losses++
  :: to != me && alive[to] -> inbox[to]!t, me, b, x, v
  fi
}

/* The lowest process this one does not suspect. */
inline lowest_trusted(res) {
  res = 0;
  do
  :: res < N && HAS(suspect, res) -> res++
  :: else -> break
  od
}

inline learn(v) {
  view = v;
  if
  :: HAS(v, me) ->
     assert(decided == v);          /* agreement */
     assert(!HAS(fenced_set, me));
     mode[me] = INSTALLED;
     installed_set = installed_set | BIT(me)
  :: else ->
     assert(decided == v);
     assert(!HAS(installed_set, me)); /* fencing */
     mode[me] = FENCED;
     fenced_set = fenced_set | BIT(me)
  fi
}

inline start_round() {
  if
  :: rounds >= MAXROUND -> mode[me] = GAVE_UP
  :: else ->
     rounds++;
     myb = (maxr + 1) * N + me;  /* higher than any ballot seen */
     maxr = maxr + 1;
     prom = 0; accd = 0; hab = 0; hav = 0;
     mode[me] = PREPARING;
     /* to every member, suspected or not: a wrong suspicion costs nothing
      * more than a late answer (its sender is then in the view) */
     q = 0;
     do
     :: q < N -> send(q, PREPARE, myb, 0, 0); q++
     :: else -> break
     od
  fi
}

/* A new suspicion: the lowest trusted process leads the change; any other
 * tells it (it may not have noticed yet). */
inline report() {
  lowest_trusted(c);
  if
  :: c == me -> skip
  :: else -> send(c, SUSPECT, 0, 0, 0)
  fi
}

inline to_phase2() {
#ifdef MUTANT_IGNORE_ACCEPTED
  val = prom;  /* wrong on purpose: a value already chosen may be replaced */
#else
  if
  :: hab > 0 -> val = hav  /* a value a quorum may have chosen: keep it */
  :: else -> val = prom    /* who answered: alive, and reachable */
  fi;
#endif
  assert(val != 0);
  mode[me] = ACCEPTING;
  q = 0;
  do
  :: q < N -> if :: HAS(prom, q) -> send(q, ACCEPT, myb, 0, val) :: else -> skip fi; q++
  :: else -> break
  od
}

inline update_busy() {
  busy[me] = alive[me] && mode[me] < INSTALLED &&
             (suspect != 0 || pb != 0 || mode[me] != ACTIVE)
}

proctype Proc(byte me) {
  byte pb = 0, ab = 0, av = 0;  /* acceptor: promised ballot, accepted ballot and value */
  byte myb = 0, rounds = 0, maxr = 0, prom = 0, accd = 0, hab = 0, hav = 0, val = 0;
  byte view = 0;                /* the members of view e+1, once known */
  mtype t;
  byte from, b, x, v, q, c, j;
  bool res;

end_loop:
  do
  /* crash */
  :: alive[me] && mode[me] < INSTALLED && crashes < MAXCRASH ->
     atomic { crashes++; alive[me] = false; busy[me] = false }; break

  /* the failure detector */
  /* a wrong suspicion of a live process (a slow node, a partition) */
  :: atomic {
       alive[me] && mode[me] < INSTALLED && falses < MAXFALSE && (suspect | BIT(me)) != ALL ->
       select(q : 0 .. N - 1);
       if
       :: q != me && !HAS(suspect, q) && alive[q] -> falses++; suspect = suspect | BIT(q); report()
       :: else -> skip
       fi;
       update_busy()
     }

  /* a member is suspected and this process is the lowest trusted one: lead
   * (once; a ballot given up is retried on a timeout) */
  :: atomic {
       alive[me] && mode[me] == ACTIVE && suspect != 0 && rounds == 0 && pb == 0 && LOWEST_TRUSTED_IS_ME ->
       start_round();
       update_busy()
     }

  /* a message (RECEIVE: any message queued, not only the first) */
  :: atomic {
       alive[me] && nempty(inbox[me]) -> inbox[me]??t, from, b, x, v;
       if
       :: mode[me] >= INSTALLED ->
          /* view e is decided here: a process still deciding it learns the
           * result, also from a fenced process (which answers so for a
           * while before it exits: it may be the only one that knows) */
          if
          :: view != 0 && (t == PREPARE || t == ACCEPT) -> send(from, COMMIT, 0, 0, view)
          :: else -> skip
          fi
       :: t == SUSPECT ->
          /* a member suspects another and takes this one for the leader */
          if
          :: mode[me] == ACTIVE && rounds == 0 && pb == 0 -> start_round()
          :: else -> skip
          fi
       :: t == PREPARE ->
          if
          :: b > pb -> pb = b; maxr = (b / N > maxr -> b / N : maxr);
                       promised_set = promised_set | BIT(me);
                       send(from, PROMISE, b, ab, av)
          :: else -> send(from, NACK, pb, 0, 0)
          fi
       :: t == ACCEPT ->
          if
          :: b >= pb -> pb = b; ab = b; av = v; send(from, ACCEPTED, b, 0, 0)
          :: else -> send(from, NACK, pb, 0, 0)
          fi
       :: t == PROMISE && mode[me] == PREPARING && b == myb ->
          prom = prom | BIT(from);
          if :: x > hab -> hab = x; hav = v :: else -> skip fi;
          /* everyone trusted has answered and they are a quorum: go on at
           * once (else wait: a suspected one may answer after all) */
          is_quorum(prom, res);
          if
          :: (prom | suspect) == ALL && res -> to_phase2()
          :: else -> skip
          fi
       :: t == ACCEPTED && mode[me] == ACCEPTING && b == myb ->
          accd = accd | BIT(from);
          is_quorum(accd, res);
          if
          :: res ->
             /* chosen */
             assert(decided == 0 || decided == val);  /* agreement */
             is_quorum(val, res);
             assert(res);                              /* validity */
             assert((val & ~promised_set) == 0);       /* validity */
             decided = val;
             q = 0;
             do
             :: q < N -> if :: q != me -> send(q, COMMIT, 0, 0, val) :: else -> skip fi; q++
             :: else -> break
             od;
             learn(val)
          :: else -> skip
          fi
       :: t == NACK && (mode[me] == PREPARING || mode[me] == ACCEPTING) && b > myb ->
          maxr = (b / N > maxr -> b / N : maxr);
          mode[me] = ACTIVE  /* a higher ballot leads; wait for it, or time it out */
       :: t == COMMIT -> learn(v)
       :: else -> skip  /* stale: an answer to an abandoned ballot */
       fi;
       update_busy()
     }

  /* a timeout: nothing else in the system can move */
  :: atomic {
       timeout && BUSY(me) ->
       if
       /* the detector is complete: every crash is eventually suspected */
       :: crashed_unsuspected ->
          q = 0;
          do
          :: q < N -> if :: !alive[q] -> suspect = suspect | BIT(q) :: else -> skip fi; q++
          :: else -> break
          od;
          report()
       :: !crashed_unsuspected && mode[me] == PREPARING ->
          /* who did not answer is suspected; lead on with a quorum, else again */
          suspect = suspect | (ALL & ~prom & ~BIT(me));
          is_quorum(prom, res);
          if :: res -> to_phase2() :: else -> mode[me] = ACTIVE fi
       :: !crashed_unsuspected && mode[me] == ACCEPTING ->
          suspect = suspect | (prom & ~accd & ~BIT(me));
          mode[me] = ACTIVE
       :: !crashed_unsuspected && mode[me] == ACTIVE ->
          /* waiting for a leader that does not come: suspect it, or lead */
          lowest_trusted(c);
          if
          :: c == me -> start_round()
          :: else ->
             suspect = suspect | BIT(c);
             lowest_trusted(c);
             if :: c == me -> start_round() :: else -> send(c, SUSPECT, 0, 0, 0) fi
          fi
       fi;
       update_busy()
     }
  od
}

/* No process can move and none would act on a timeout: the end. */
active proctype Check() {
  byte i, c, j, live = 0;
  bool res;
  atomic {
    timeout && !BUSY(0) && !BUSY(1) && !BUSY(2) && !BUSY(3) ->
    i = 0;
    do
    :: i < N -> if :: alive[i] -> live = live | BIT(i) :: else -> skip fi; i++
    :: else -> break
    od;
    assert((installed_set & fenced_set) == 0);
    assert(decided == 0 || (installed_set & ~decided) == 0);
    is_quorum(live, res);
    if
    :: res && (crashes > 0 || falses > 0) ->
       /* termination: a view was decided and every live process knows it */
       assert(decided != 0);
       i = 0;
       do
       :: i < N ->
          if
          :: alive[i] -> assert(mode[i] == INSTALLED || mode[i] == FENCED)
          :: else -> skip
          fi;
          i++
       :: else -> break
       od
    :: else -> skip
    fi
  }
}

init {
  byte i;
  atomic {
    i = 0;
    do
    :: i < N -> alive[i] = true; mode[i] = ACTIVE; i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < N -> run Proc(i); i++
    :: else -> break
    od
  }
}
