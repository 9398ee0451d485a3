/*
 * Recovery by the step (docs/subgroups.md, "Recovery by the step"), as a
 * SPIN model: 4 members in a 2 x 2 mesh (slot q's row mate is slot q^1,
 * its column mate slot q^2) and SPARES waiting processes. Each step is a
 * row call, a column call (two-party subgroup calls), then the vote, a call
 * of the world whose result is the maximum of the members' flags; vote 0
 * commits the step, vote 1 makes the subgroups again and runs the step
 * again.
 *
 * What the model lets happen: any member (a spare too, once admitted) may
 * crash at any point, at most MAXCRASH of them. The world's recovery, one
 * atomic step, drops the dead from their slots; the layers below are taken
 * as given (tested on their own): a world call gives every survivor the
 * same result (re-execution or catch-up), every wait of a subgroup's call
 * gives way to the world's recovery, and a spare is admitted at the vote
 * when a slot is empty, with the survivors' committed steps.
 *
 * The rule checked: under RINGMEND_SUBGROUP_RECOVERY=step a subgroup made
 * before a loss of the world ends at it (MemberLost), in a call or at the
 * next one; a subgroup call also ends when its partner is dead. With
 * -DCALL_RULE the model has the rule of RINGMEND_SUBGROUP_RECOVERY=call
 * instead (a subgroup whose members both live goes on), which the check
 * must find stuck: a member waiting in its column's call for a partner that
 * left its step for the vote.
 *
 * With -DGEN_NOW a subgroup's generation is the losses known when it is
 * made rather than at the last vote: also stuck (a member slow to make its
 * row after a loss waits for a mate that voted).
 *
 * Checked (tests/model/check_step_recovery_model.sh):
 *   exactness    a step is committed only when, for every slot, the member
 *                holding it at the step's start finished both of its calls
 *                in that attempt (every contribution is in the result);
 *   agreement    every member that commits a step commits the same number
 *                of steps before it, and a spare enters with that number;
 *   termination  no invalid end state: every live member finishes STEPS
 *                steps whenever every slot can be filled (MAXCRASH <=
 *                SPARES).
 */

#ifndef STEPS
#define STEPS 2
#endif
#ifndef SPARES
#define SPARES 1
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
#define SLOTS 4
#define PROCS (SLOTS + SPARES)
#define NOBODY 255
#define ROW 1  /* phase bits of a step's calls */
#define COL 2

bool alive[PROCS];
byte holder[SLOTS];   /* the process in each slot; NOBODY once its holder's loss is recovered */
byte slot_of[PROCS];  /* each process's slot; NOBODY for a waiting spare */
byte losses = 0;      /* the world's recovered losses (each ends the subgroups made before it) */
byte losses_seen = 0; /* `losses` when the last vote completed: the membership the application saw */
byte crashes = 0;
byte admitted = 0;    /* spares admitted so far */

/* per process: the attempt it is in, the calls of that attempt finished,
 * where it waits (0 none, ROW, COL, 4 the vote), its flag, its commits */
byte attempt[PROCS];
byte done[PROCS];
byte waiting[PROCS];
bit flag[PROCS];
byte commits[PROCS];
byte gen[PROCS];          /* `losses` when it made its subgroups */
byte partner[PROCS * 2];  /* its row and column mates when it made them */
/* per slot, in the current attempt: the calls its holder at the attempt's start finished */
byte slot_done[SLOTS];

byte vote_attempt = 0;  /* the attempt whose vote completed last, + 1 */
bit vote_value;

#define P_ROW(p) partner[(p) * 2]
#define P_COL(p) partner[(p) * 2 + 1]
#define DEAD_UNRECOVERED (holder[0] != NOBODY && !alive[holder[0]] || holder[1] != NOBODY && !alive[holder[1]] || \
                          holder[2] != NOBODY && !alive[holder[2]] || holder[3] != NOBODY && !alive[holder[3]])
/* every live member of the world is in the vote of attempt a */
#define IN_VOTE(q, a) (holder[q] == NOBODY || waiting[holder[q]] == 4 && attempt[holder[q]] == a)
#define ALL_IN_VOTE(a) (IN_VOTE(0, a) && IN_VOTE(1, a) && IN_VOTE(2, a) && IN_VOTE(3, a))
#define EMPTY_SLOT (holder[0] == NOBODY || holder[1] == NOBODY || holder[2] == NOBODY || holder[3] == NOBODY)

/* A subgroup's call of phase `ph` with mate `m`, for p: finished when
 * both are in it (for both at once: a mate that dies right after has its
 * contribution in), or MemberLost when the mate is dead or gone, or, under
 * the step rule, when the world lost a member since the subgroup was made. */
#ifdef CALL_RULE
#define ENDED(p, m) (m == NOBODY || !alive[m] || slot_of[m] == NOBODY)
#else
#define ENDED(p, m) (m == NOBODY || !alive[m] || slot_of[m] == NOBODY || losses > gen[p])
#endif

/* Under the membership the application saw at its last world call (the
 * vote): a member slow to make them after a loss recovered since makes
 * subgroups that end at it, as its mates' do. -DGEN_NOW takes the losses
 * known now instead, which the check must find stuck. */
inline make_subgroups(p) {
#ifdef GEN_NOW
  gen[p] = losses;
#else
  gen[p] = losses_seen;
#endif
  P_ROW(p) = holder[slot_of[p] ^ 1];
  P_COL(p) = holder[slot_of[p] ^ 2]
}

inline subgroup_call(p, m, ph) {
  if
  :: (done[p] & ph) -> skip  /* the mate finished it for both */
  :: atomic { m != NOBODY && alive[m] && attempt[m] == attempt[p] && waiting[m] == ph ->
       done[p] = done[p] | ph;
       done[m] = done[m] | ph;
       slot_done[slot_of[p]] = slot_done[slot_of[p]] | ph;
       slot_done[slot_of[m]] = slot_done[slot_of[m]] | ph }
  :: atomic { ENDED(p, m) -> flag[p] = 1 }
  fi;
  atomic {
    waiting[p] = 0;
    if  /* on to its column's call, or to the vote */
    :: ph == ROW && flag[p] == 0 -> waiting[p] = COL
    :: else -> waiting[p] = 4
    fi
  }
}

proctype process(byte p) {
  {
    if
    :: p >= SLOTS ->  /* a spare: admitted at a vote, in an empty slot, with the survivors' state */
end_spare:
       slot_of[p] != NOBODY;
       flag[p] = 1;  /* waiting[p] is the vote already */
       goto vote
    :: else -> make_subgroups(p)
    fi;
step:
    atomic {
      if
      :: commits[p] == STEPS -> goto finished
      :: else -> flag[p] = 0; waiting[p] = ROW
      fi
    };
    subgroup_call(p, P_ROW(p), ROW);
    if
    :: waiting[p] == COL -> subgroup_call(p, P_COL(p), COL)
    :: else -> skip
    fi;
vote:
    /* the vote completes for every member at once (a world call's result
     * is the same on every survivor) */
    vote_attempt > attempt[p];
    atomic {
      waiting[p] = 0;
      done[p] = 0;
      attempt[p] = attempt[p] + 1;
      if
      :: vote_value == 0 -> commits[p] = commits[p] + 1
      :: else -> make_subgroups(p)
      fi;
      goto step
    };
finished:
    skip
  } unless { !alive[p] }  /* a crash stops it wherever it is */
}

/* The world: its recovery, a spare's admission, the vote's completion. */
proctype world() {
  byte q, a, s;
end_world:
  do
  /* A crash, at any point of any member. */
  :: atomic { crashes < MAXCRASH ->
       q = 0;
       do
       :: q < SLOTS && holder[q] != NOBODY && alive[holder[q]] -> alive[holder[q]] = 0; crashes++; break
       :: q < SLOTS -> q++
       :: q == SLOTS -> break
       od }
  /* The recovery: every survivor takes part from wherever it waits. */
  :: atomic { DEAD_UNRECOVERED ->
       for (q : 0 .. SLOTS - 1) {
         if
         :: holder[q] != NOBODY && !alive[holder[q]] -> slot_of[holder[q]] = NOBODY; holder[q] = NOBODY; losses++
         :: else -> skip
         fi
       } }
  /* A spare's admission, in the vote every member is in. */
  :: atomic { !DEAD_UNRECOVERED && EMPTY_SLOT && ALL_IN_VOTE(vote_attempt) ->
       s = SLOTS;
       do
       :: s < PROCS && slot_of[s] == NOBODY && alive[s] && commits[s] == 0 && attempt[s] == 0 && waiting[s] == 0 -> break
       :: s < PROCS && !(slot_of[s] == NOBODY && alive[s] && commits[s] == 0 && attempt[s] == 0 && waiting[s] == 0) -> s++
       :: s == PROCS -> break
       od;
       if
       :: s < PROCS ->
          q = 0;
          do :: holder[q] == NOBODY -> break :: else -> q++ od;
          /* agreement: the survivors all committed as many steps */
          a = 0;
          do
          :: a < SLOTS && holder[a] != NOBODY -> commits[s] = commits[holder[a]]; break
          :: a < SLOTS && holder[a] == NOBODY -> a++
          :: a == SLOTS -> break
          od;
          for (a : 0 .. SLOTS - 1) { assert(holder[a] == NOBODY || commits[holder[a]] == commits[s]) }
          attempt[s] = vote_attempt;
          holder[q] = s;
          slot_of[s] = q;
          admitted++;
          waiting[s] = 4
       :: else -> skip
       fi }
  /* The vote completes: every live member is in it, none dead unseen, no
   * spare left outside an empty slot. */
  :: atomic { !DEAD_UNRECOVERED && ALL_IN_VOTE(vote_attempt) && (!EMPTY_SLOT || admitted == SPARES) ->
       vote_value = 0;
       for (q : 0 .. SLOTS - 1) {
         if :: holder[q] != NOBODY && flag[holder[q]] -> vote_value = 1 :: else -> skip fi
       }
       if
       :: vote_value == 0 ->
          /* exactness: every slot's contribution is in the step */
          for (q : 0 .. SLOTS - 1) { assert(slot_done[q] == (ROW | COL)) }
       :: else -> skip
       fi;
       for (q : 0 .. SLOTS - 1) { slot_done[q] = 0 }
       losses_seen = losses;
       vote_attempt++ }
  /* Everybody alive is done. */
  :: atomic { (holder[0] == NOBODY || commits[holder[0]] == STEPS) && (holder[1] == NOBODY || commits[holder[1]] == STEPS) &&
              (holder[2] == NOBODY || commits[holder[2]] == STEPS) && (holder[3] == NOBODY || commits[holder[3]] == STEPS) &&
              !DEAD_UNRECOVERED -> break }
  od
}

init {
  byte p;
  atomic {
    for (p : 0 .. PROCS - 1) {
      alive[p] = 1;
      if :: p < SLOTS -> holder[p] = p; slot_of[p] = p :: else -> slot_of[p] = NOBODY fi
    }
    for (p : 0 .. PROCS - 1) { run process(p) }
    run world()
  }
}
