/*
 * mpi_t: nbrma's counters and settings through the MPI tool interface (MPI_T), as a tool
 * sees them (src/mpi/tool_interface.cpp, README "Tool interface (MPI_T)").
 *
 * - Before MPI_T_init_thread every call is MPI_T_ERR_NOT_INITIALIZED, and again after the
 *   last MPI_T_finalize (with a handle that was valid before).
 * - nbrma's performance variables ("nbrma_*") are exactly the indices from MPICH's count
 *   (MPICH's own PMPI_T_pvar_get_num: nbrma's PMPI_ names are its MPI_ ones, so the
 *   test looks MPICH's up in libmpich.so) on, its control variables ("NBRMA_*") likewise
 *   after MPICH's PMPI_T_cvar_get_num; every pvar name, prefix removed, is a name nbrma_get_counter knows
 *   with the same value (one table).
 * - Found by name (get_index) in a session, the counters grow by exactly the epochs, puts
 *   and lock grants this rank made while started, not at all while stopped; reset, write
 *   and readreset act on the handle's value. A lock held by its target makes rank 0's
 *   next lock epoch's put recorded, and its second lock epoch deferred with its put
 *   recorded: epochs_deferred +1, rma_ops_replayed +2.
 * - Control variables: NBRMA_NOTIFY_MAX, set with setenv before MPI_T_init_thread, reads
 *   back; NBRMA_TEST_DIE_AT (unset) reads as its default ""; NBRMA_TRANSPORT reads as the
 *   suite mode's value or "shm"; writing is MPI_T_ERR_CVAR_SET_NEVER.
 * - One category "nbrma" after MPICH's lists exactly those variables.
 * - Every error class: INVALID_INDEX, INVALID_NAME, INVALID_SESSION, INVALID_HANDLE (null,
 *   other session), PVAR_NO_STARTSTOP / PVAR_NO_WRITE on a continuous read-only variable.
 * - MPICH's control variables of its own RMA and its progress thread carry a note that
 *   they have no effect on RMA under nbrma before MPICH's description; the others are
 *   described as MPICH describes them.
 * - MPICH's side through the same calls: an MPICH cvar (MPIR_CVAR_ASYNC_PROGRESS) is found,
 *   described and read; MPI_T_PVAR_ALL_HANDLES start/stop reach MPICH's session; MPICH's
 *   first pvar is read in nbrma's session when MPICH has any (Debian's 4.0.2 has none).
 *
 * `mpi_t threads`: the same with MPI_THREAD_MULTIPLE while 3 more threads make and use
 * sessions, handles and control variable handles over and over.
 * `mpi_t list` also prints nbrma's variables with their descriptions (rank 0).
 */
#include <dlfcn.h>
#include <stdint.h>

#include "rmatest.h"
#include "rmathreads.h"

/* MPICH's own MPI_T counts: nbrma defines the PMPI_ names too (src/mpich/pmpi.hpp), so
 * they are looked up in libmpich.so itself, as nbrma does (src/mpich/entry_points.cpp). */
static int (*mpich_T_category_get_num)(int *);
static int (*mpich_T_cvar_get_num)(int *);
static int (*mpich_T_pvar_get_num)(int *);
static int (*mpich_T_cvar_get_info)(int, char *, int *, int *, MPI_Datatype *, MPI_T_enum *,
                                    char *, int *, int *, int *);

static void resolve_mpich(void)
{
    void *mpich = dlopen("libmpich.so.12", RTLD_LAZY | RTLD_NOLOAD);
    if (!mpich) {
        fprintf(stderr, "mpi_t: cannot open libmpich.so: %s\n", dlerror());
        exit(1);
    }
    *(void **)&mpich_T_category_get_num = dlsym(mpich, "PMPI_T_category_get_num");
    *(void **)&mpich_T_cvar_get_num = dlsym(mpich, "PMPI_T_cvar_get_num");
    *(void **)&mpich_T_pvar_get_num = dlsym(mpich, "PMPI_T_pvar_get_num");
    *(void **)&mpich_T_cvar_get_info = dlsym(mpich, "PMPI_T_cvar_get_info");
    if (!mpich_T_category_get_num || !mpich_T_cvar_get_num || !mpich_T_pvar_get_num ||
        !mpich_T_cvar_get_info) {
        fprintf(stderr, "mpi_t: MPICH's MPI_T counts not found in libmpich.so.12\n");
        exit(1);
    }
}

#define NPUTS 5
#define NEPOCHS 3

/* Results of calls made before MPI_Init, checked once CHECK can name the rank. */
static int early_rc[4];

static int name_has_prefix(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static void pvar_name(int index, char *name, int size)
{
    int len = size, verbosity, var_class, bind, readonly, continuous, atomic;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    int rc = MPI_T_pvar_get_info(index, name, &len, &verbosity, &var_class, &type, &enumtype,
                                 NULL, NULL, &bind, &readonly, &continuous, &atomic);
    CHECK(rc == MPI_SUCCESS, "MPI_T_pvar_get_info(%d) = %d", index, rc);
    if (rc != MPI_SUCCESS)
        name[0] = '\0';
}

static void cvar_name(int index, char *name, int size)
{
    int len = size, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    int rc = MPI_T_cvar_get_info(index, name, &len, &verbosity, &type, &enumtype, NULL, NULL,
                                 &bind, &scope);
    CHECK(rc == MPI_SUCCESS, "MPI_T_cvar_get_info(%d) = %d", index, rc);
    if (rc != MPI_SUCCESS)
        name[0] = '\0';
}

/* A handle on nbrma's counter `name` in `session`. */
static MPI_T_pvar_handle counter_handle(MPI_T_pvar_session session, const char *name)
{
    int index = -1, count = 0;
    MPI_T_pvar_handle handle = MPI_T_PVAR_HANDLE_NULL;
    int rc = MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index);
    CHECK(rc == MPI_SUCCESS, "MPI_T_pvar_get_index(%s) = %d", name, rc);
    rc = MPI_T_pvar_handle_alloc(session, index, NULL, &handle, &count);
    CHECK(rc == MPI_SUCCESS && count == 1, "MPI_T_pvar_handle_alloc(%s) = %d, count %d", name,
          rc, count);
    return handle;
}

static unsigned long long read_handle(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    unsigned long long value = 0xdeadbeef;
    int rc = MPI_T_pvar_read(session, handle, &value);
    CHECK(rc == MPI_SUCCESS, "MPI_T_pvar_read = %d", rc);
    return value;
}

/* One exclusive lock epoch on `target` with NPUTS puts. */
static void lock_epoch(MPI_Win win, int target)
{
    int values[NPUTS];
    for (int i = 0; i < NPUTS; i++)
        values[i] = i;
    MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
    for (int i = 0; i < NPUTS; i++)
        MPI_CHK(MPI_Put(&values[i], 1, MPI_INT, target, i, 1, MPI_INT, win));
    MPI_CHK(MPI_Win_unlock(target, win));
}

static void check_cvar_string(const char *name, const char *expected)
{
    int index = -1, count = 0;
    MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
    char value[256] = "unread";
    int rc = MPI_T_cvar_get_index(name, &index);
    CHECK(rc == MPI_SUCCESS, "MPI_T_cvar_get_index(%s) = %d", name, rc);
    rc = MPI_T_cvar_handle_alloc(index, NULL, &handle, &count);
    CHECK(rc == MPI_SUCCESS && count == (int) strlen(expected) + 1,
          "MPI_T_cvar_handle_alloc(%s) = %d, count %d, expected %d", name, rc, count,
          (int) strlen(expected) + 1);
    if (rc != MPI_SUCCESS || count > (int) sizeof value)
        return;
    rc = MPI_T_cvar_read(handle, value);
    CHECK(rc == MPI_SUCCESS && strcmp(value, expected) == 0,
          "MPI_T_cvar_read(%s) = %d, \"%s\", expected \"%s\"", name, rc, value, expected);
    rc = MPI_T_cvar_write(handle, "other");
    CHECK(rc == MPI_T_ERR_CVAR_SET_NEVER, "MPI_T_cvar_write(%s) = %d, expected SET_NEVER", name,
          rc);
    rc = MPI_T_cvar_handle_free(&handle);
    CHECK(rc == MPI_SUCCESS && handle == MPI_T_CVAR_HANDLE_NULL,
          "MPI_T_cvar_handle_free(%s) = %d", name, rc);
}

/* `mpi_t threads`: MPI_T from several threads at once (MPI_THREAD_MULTIPLE) while the main
 * thread runs the counting checks: each thread makes its own sessions, handles and control
 * variable handles over and over (every 0.2 ms); its counter handle never goes backwards. */
#define CHURN_THREADS 3
static int churn_stop;

static void *churn(void *unused)
{
    (void) unused;
    int rounds = 0;
    while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE) || rounds < 20) {
        MPI_T_pvar_session session;
        MPI_T_pvar_handle ops, helpers;
        MPI_T_cvar_handle cvar;
        int ops_index, helpers_index, cvar_index, count, rc = MPI_SUCCESS;
        unsigned long long before = 0, after = 0, direct = 0;
        char value[64] = "";
        rc |= MPI_T_pvar_get_index("nbrma_rma_ops", MPI_T_PVAR_CLASS_COUNTER, &ops_index);
        rc |= MPI_T_pvar_get_index("nbrma_helpers", MPI_T_PVAR_CLASS_LEVEL, &helpers_index);
        rc |= MPI_T_pvar_session_create(&session);
        rc |= MPI_T_pvar_handle_alloc(session, ops_index, NULL, &ops, &count);
        rc |= MPI_T_pvar_handle_alloc(session, helpers_index, NULL, &helpers, &count);
        rc |= MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES);
        rc |= MPI_T_pvar_read(session, ops, &before);
        rc |= MPI_T_pvar_readreset(session, ops, &after);
        rc |= MPI_T_pvar_read(session, helpers, &direct);
        TCHECK(after >= before, "thread: readreset %llu after read %llu", after, before);
        rc |= MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES);
        rc |= MPI_T_pvar_handle_free(session, &ops);
        rc |= MPI_T_pvar_session_free(&session); /* frees `helpers` */
        rc |= MPI_T_cvar_get_index("NBRMA_NOTIFY_MAX", &cvar_index);
        rc |= MPI_T_cvar_handle_alloc(cvar_index, NULL, &cvar, &count);
        if (count <= (int) sizeof value)
            rc |= MPI_T_cvar_read(cvar, value);
        rc |= MPI_T_cvar_handle_free(&cvar);
        TCHECK(rc == MPI_SUCCESS && strcmp(value, "1024") == 0,
               "thread: round %d: rc %d, NBRMA_NOTIFY_MAX \"%s\"", rounds, rc, value);
        rounds++;
        /* a tool samples now and then: back-to-back rounds on an oversubscribed node would
         * mostly measure the progress lock handed between spinning threads */
        nanosleep(&(struct timespec){ 0, 200 * 1000 }, NULL);
    }
    return NULL;
}

/* `mpi_t list`: rank 0 prints nbrma's variables as a tool enumerates them (README). */
static void list_variables(void)
{
    int mpich = 0, all = 0;
    MPI_CHK(mpich_T_pvar_get_num(&mpich));
    MPI_CHK(MPI_T_pvar_get_num(&all));
    printf("performance variables %d..%d (after MPICH's %d):\n", mpich, all - 1, mpich);
    for (int i = mpich; i < all; i++) {
        char name[128], desc[512];
        int name_len = sizeof name, desc_len = sizeof desc, var_class, continuous;
        MPI_CHK(MPI_T_pvar_get_info(i, name, &name_len, NULL, &var_class, NULL, NULL, desc,
                                    &desc_len, NULL, NULL, &continuous, NULL));
        printf("  %-32s %-8s %s\n", name,
               var_class == MPI_T_PVAR_CLASS_COUNTER ? "counter"
               : var_class == MPI_T_PVAR_CLASS_LEVEL ? "level"
               : var_class == MPI_T_PVAR_CLASS_SIZE  ? "size"
                                                     : "generic",
               desc);
    }
    MPI_CHK(mpich_T_cvar_get_num(&mpich));
    MPI_CHK(MPI_T_cvar_get_num(&all));
    printf("control variables %d..%d (after MPICH's %d):\n", mpich, all - 1, mpich);
    for (int i = mpich; i < all; i++) {
        char name[128], desc[1024];
        int name_len = sizeof name, desc_len = sizeof desc;
        MPI_CHK(MPI_T_cvar_get_info(i, name, &name_len, NULL, NULL, NULL, desc, &desc_len, NULL,
                                    NULL));
        printf("  %-20s %s\n", name, desc);
    }
    fflush(stdout);
}

/* nbrma's variables come right after MPICH's, and only there. */
static void check_order(void)
{
    char name[256];
    int mpich = -1, all = -1, first = -1;
    MPI_CHK(mpich_T_pvar_get_num(&mpich));
    MPI_CHK(MPI_T_pvar_get_num(&all));
    CHECK(all > mpich, "pvars: %d in all, %d MPICH's", all, mpich);
    for (int i = 0; i < all; i++) {
        pvar_name(i, name, sizeof name);
        if (first < 0 && name_has_prefix(name, "nbrma_"))
            first = i;
        CHECK(name_has_prefix(name, "nbrma_") == (i >= mpich), "pvar %d is %s (MPICH has %d)",
              i, name, mpich);
        if (i >= mpich) {  /* the same table as nbrma_get_counter's */
            unsigned long long value = 0;
            int rc = nbrma_get_counter(name + strlen("nbrma_"), &value);
            CHECK(rc == MPI_SUCCESS, "nbrma_get_counter(%s) = %d", name + 6, rc);
        }
    }
    CHECK(first == mpich, "first nbrma_ pvar at %d, MPICH has %d", first, mpich);

    MPI_CHK(mpich_T_cvar_get_num(&mpich));
    MPI_CHK(MPI_T_cvar_get_num(&all));
    CHECK(all > mpich, "cvars: %d in all, %d MPICH's", all, mpich);
    first = -1;
    for (int i = 0; i < all; i++) {
        cvar_name(i, name, sizeof name);
        if (first < 0 && name_has_prefix(name, "NBRMA_"))
            first = i;
        CHECK(name_has_prefix(name, "NBRMA_") == (i >= mpich), "cvar %d is %s (MPICH has %d)",
              i, name, mpich);
        CHECK(strchr(name, '*') == NULL, "cvar %d is the family %s", i, name);
    }
    CHECK(first == mpich, "first NBRMA_ cvar at %d, MPICH has %d", first, mpich);
}

/* MPICH's control variables of its own RMA (every name with "_RMA_" or ending in "_RMA")
 * and of its progress thread (MPIR_CVAR_ASYNC_PROGRESS, MPIR_CVAR_PROGRESS_THREAD_AFFINITY)
 * are described as MPICH describes them after a note "[nbrma: ...] "; every other one
 * exactly as MPICH does. The length query (desc NULL) counts the note; a short buffer gets
 * the note's beginning, truncated and terminated. */
static void check_mpich_cvar_notes(void)
{
    static const char note_start[] = "[nbrma: ";
    int mpich = -1, marked = 0;
    MPI_CHK(mpich_T_cvar_get_num(&mpich));
    for (int i = 0; i < mpich; i++) {
        char name[256], ours[4096], theirs[4096];
        int ours_len = sizeof ours, theirs_len = sizeof theirs, query_len = 0;
        cvar_name(i, name, sizeof name);
        MPI_CHK(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, ours, &ours_len, NULL,
                                    NULL));
        MPI_CHK(mpich_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, theirs, &theirs_len,
                                      NULL, NULL));
        MPI_CHK(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, &query_len, NULL,
                                    NULL));
        const size_t length = strlen(name);
        const int rma = strstr(name, "_RMA_") != NULL ||
                        (length >= 4 && strcmp(name + length - 4, "_RMA") == 0);
        const int expect_note = rma || strcmp(name, "MPIR_CVAR_ASYNC_PROGRESS") == 0 ||
                                strcmp(name, "MPIR_CVAR_PROGRESS_THREAD_AFFINITY") == 0;
        if (!expect_note) {
            CHECK(strcmp(ours, theirs) == 0, "%s described \"%.60s\", MPICH: \"%.60s\"", name,
                  ours, theirs);
            continue;
        }
        marked++;
        const char *end = strchr(ours, ']');
        CHECK(name_has_prefix(ours, note_start) && end && end[1] == ' ' &&
                  strcmp(end + 2, theirs) == 0,
              "%s described \"%.100s\", expected a note before MPICH's \"%.60s\"", name, ours,
              theirs);
        CHECK(query_len == (int)strlen(ours) + 1, "%s: length query %d, description %zu + 1",
              name, query_len, strlen(ours));
        char shortened[10];
        int shortened_len = sizeof shortened;
        MPI_CHK(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, shortened,
                                    &shortened_len, NULL, NULL));
        CHECK(shortened_len == (int)sizeof shortened &&
                  strncmp(shortened, ours, sizeof shortened - 1) == 0 &&
                  shortened[sizeof shortened - 1] == '\0',
              "%s in %zu bytes: \"%s\", length %d", name, sizeof shortened, shortened,
              shortened_len);
    }
    /* Debian's MPICH 4.0.2 has 22 (20 of RMA, 2 of its progress thread) */
    CHECK(marked >= 10, "only %d of MPICH's %d control variables carry nbrma's note", marked,
          mpich);
}

/* One category "nbrma" after MPICH's, holding exactly nbrma's variables. */
static void check_categories(void)
{
    int mpich = 0, all = 0, index = -1, rc, num_cvars = -1, num_pvars = -1, num_cats = -1;
    int pvar_first = 0, pvar_all = 0, cvar_first = 0, cvar_all = 0, events = -1;
    char name[64];
    int name_len = sizeof name;
    MPI_CHK(mpich_T_category_get_num(&mpich));
    MPI_CHK(MPI_T_category_get_num(&all));
    CHECK(all == mpich + 1, "categories: %d in all, %d MPICH's", all, mpich);
    rc = MPI_T_category_get_index("nbrma", &index);
    CHECK(rc == MPI_SUCCESS && index == mpich, "category_get_index(nbrma): rc %d index %d", rc,
          index);
    MPI_CHK(mpich_T_pvar_get_num(&pvar_first));
    MPI_CHK(MPI_T_pvar_get_num(&pvar_all));
    MPI_CHK(mpich_T_cvar_get_num(&cvar_first));
    MPI_CHK(MPI_T_cvar_get_num(&cvar_all));
    rc = MPI_T_category_get_info(mpich, name, &name_len, NULL, NULL, &num_cvars, &num_pvars,
                                 &num_cats);
    CHECK(rc == MPI_SUCCESS && strcmp(name, "nbrma") == 0 &&
              num_pvars == pvar_all - pvar_first && num_cvars == cvar_all - cvar_first &&
              num_cats == 0,
          "category nbrma: rc %d name %s pvars %d cvars %d categories %d", rc, name, num_pvars,
          num_cvars, num_cats);
    if (rc == MPI_SUCCESS && num_pvars > 0 && num_pvars <= 64 && num_cvars > 0 &&
        num_cvars <= 64) {
        int indices[64];
        MPI_CHK(MPI_T_category_get_pvars(mpich, num_pvars, indices));
        for (int i = 0; i < num_pvars; i++)
            CHECK(indices[i] == pvar_first + i, "category pvar %d is %d", i, indices[i]);
        MPI_CHK(MPI_T_category_get_cvars(mpich, num_cvars, indices));
        for (int i = 0; i < num_cvars; i++)
            CHECK(indices[i] == cvar_first + i, "category cvar %d is %d", i, indices[i]);
    }
    rc = MPI_T_category_get_num_events(mpich, &events);
    CHECK(rc == MPI_SUCCESS && events == 0, "category nbrma events: rc %d, %d", rc, events);
    MPI_CHK(MPI_T_category_get_categories(mpich, 0, NULL));
    /* MPICH's first category is still MPICH's */
    name_len = sizeof name;
    rc = MPI_T_category_get_info(0, name, &name_len, NULL, NULL, NULL, NULL, NULL);
    CHECK(rc == MPI_SUCCESS && name[0] != '\0' && strcmp(name, "nbrma") != 0,
          "MPICH's category 0: rc %d name %s", rc, name);
    /* errors */
    rc = MPI_T_category_get_info(all, name, &name_len, NULL, NULL, NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "category_get_info(num) = %d", rc);
    rc = MPI_T_category_get_pvars(-1, 0, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "category_get_pvars(-1) = %d", rc);
    rc = MPI_T_category_get_cvars(all, 0, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "category_get_cvars(num) = %d", rc);
    rc = MPI_T_category_get_index("nbrma_none", &index);
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "category_get_index(unknown) = %d", rc);
}

static void check_pvar_info(void)
{
    int index = -1, all = 0, rc;
    char name[64], desc[512];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly,
        continuous, atomic;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_CHK(MPI_T_pvar_get_index("nbrma_epochs_completed", MPI_T_PVAR_CLASS_COUNTER, &index));
    rc = MPI_T_pvar_get_info(index, name, &name_len, &verbosity, &var_class, &type, &enumtype,
                             desc, &desc_len, &bind, &readonly, &continuous, &atomic);
    CHECK(rc == MPI_SUCCESS && strcmp(name, "nbrma_epochs_completed") == 0 &&
              name_len == (int) strlen(name) + 1 && var_class == MPI_T_PVAR_CLASS_COUNTER &&
              type == MPI_UNSIGNED_LONG_LONG && enumtype == MPI_T_ENUM_NULL &&
              bind == MPI_T_BIND_NO_OBJECT && !readonly && !continuous && atomic &&
              desc_len > 1 && desc_len == (int) strlen(desc) + 1,
          "pvar_get_info(nbrma_epochs_completed): rc %d name %s len %d class %d bind %d ro %d "
          "cont %d atomic %d", rc, name, name_len, var_class, bind, readonly, continuous,
          atomic);
    /* a zero length asks for the length; a short buffer truncates */
    name_len = 0;
    rc = MPI_T_pvar_get_info(index, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL);
    CHECK(rc == MPI_SUCCESS && name_len == (int) strlen("nbrma_epochs_completed") + 1,
          "name_len 0: rc %d len %d", rc, name_len);
    name_len = 6;
    rc = MPI_T_pvar_get_info(index, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL);
    CHECK(rc == MPI_SUCCESS && strcmp(name, "nbrma") == 0 && name_len == 6,
          "name_len 6: rc %d \"%s\" len %d", rc, name, name_len);

    MPI_CHK(MPI_T_pvar_get_index("nbrma_helpers", MPI_T_PVAR_CLASS_LEVEL, &index));
    rc = MPI_T_pvar_get_info(index, NULL, NULL, NULL, &var_class, NULL, NULL, NULL, NULL, NULL,
                             &readonly, &continuous, NULL);
    CHECK(rc == MPI_SUCCESS && var_class == MPI_T_PVAR_CLASS_LEVEL && readonly && continuous,
          "nbrma_helpers: rc %d class %d ro %d cont %d", rc, var_class, readonly, continuous);

    /* errors */
    MPI_CHK(MPI_T_pvar_get_num(&all));
    rc = MPI_T_pvar_get_info(all, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "pvar_get_info(num) = %d", rc);
    rc = MPI_T_pvar_get_info(-1, name, &name_len, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                             NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "pvar_get_info(-1) = %d", rc);
    rc = MPI_T_pvar_get_index("nbrma_epochs_completed", MPI_T_PVAR_CLASS_LEVEL, &index);
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "pvar_get_index(wrong class) = %d", rc);
    rc = MPI_T_pvar_get_index("nbrma_no_such_counter", MPI_T_PVAR_CLASS_COUNTER, &index);
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "pvar_get_index(unknown) = %d", rc);
}

/* Counters in a session: exact increases while started, none while stopped; reset,
 * write, readreset. */
static void check_counting(MPI_Win win, int me, int np)
{
    const int target = (me + 1) % np;
    MPI_T_pvar_session session, other;
    MPI_CHK(MPI_T_pvar_session_create(&session));
    MPI_CHK(MPI_T_pvar_session_create(&other));
    MPI_T_pvar_handle opened = counter_handle(session, "nbrma_epochs_opened");
    MPI_T_pvar_handle completed = counter_handle(session, "nbrma_epochs_completed");
    MPI_T_pvar_handle ops = counter_handle(session, "nbrma_rma_ops");
    MPI_T_pvar_handle grants = counter_handle(session, "nbrma_lock_grants");
    MPI_T_pvar_handle windows = counter_handle(session, "nbrma_windows_created");
    MPI_T_pvar_handle deferred = counter_handle(session, "nbrma_epochs_deferred");
    MPI_T_pvar_handle replayed = counter_handle(session, "nbrma_rma_ops_replayed");
    MPI_T_pvar_handle in_other = counter_handle(other, "nbrma_rma_ops");
    int rc;

    /* not started yet: nothing counted */
    lock_epoch(win, target);
    CHECK(read_handle(session, opened) == 0, "epochs_opened before start");
    CHECK(read_handle(session, ops) == 0, "rma_ops before start");

    /* MPI_T_PVAR_ALL_HANDLES starts nbrma's handles and MPICH's (none) */
    MPI_CHK(MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES));
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    for (int e = 0; e < NEPOCHS; e++)
        lock_epoch(win, target);
    CHECK(read_handle(session, opened) == NEPOCHS, "epochs_opened %llu, expected %d",
          read_handle(session, opened), NEPOCHS);
    CHECK(read_handle(session, completed) == NEPOCHS, "epochs_completed %llu, expected %d",
          read_handle(session, completed), NEPOCHS);
    CHECK(read_handle(session, ops) == NEPOCHS * NPUTS, "rma_ops %llu, expected %d",
          read_handle(session, ops), NEPOCHS * NPUTS);
    CHECK(read_handle(session, grants) == NEPOCHS, "lock_grants %llu, expected %d",
          read_handle(session, grants), NEPOCHS);
    CHECK(read_handle(session, windows) == 0, "windows_created %llu, expected 0",
          read_handle(session, windows));
    CHECK(read_handle(other, in_other) == 0, "a handle of another session, never started");

    /* stopped: frozen; started again: counts on from there */
    MPI_CHK(MPI_T_pvar_stop(session, opened));
    lock_epoch(win, target);
    CHECK(read_handle(session, opened) == NEPOCHS, "epochs_opened %llu while stopped",
          read_handle(session, opened));
    CHECK(read_handle(session, completed) == NEPOCHS + 1, "epochs_completed %llu",
          read_handle(session, completed));
    MPI_CHK(MPI_T_pvar_start(session, opened));
    lock_epoch(win, target);
    CHECK(read_handle(session, opened) == NEPOCHS + 1, "epochs_opened %llu after restart",
          read_handle(session, opened));

    /* reset, readreset, write */
    MPI_CHK(MPI_T_pvar_reset(session, ops));
    CHECK(read_handle(session, ops) == 0, "rma_ops after reset");
    lock_epoch(win, target);
    unsigned long long value = 0;
    MPI_CHK(MPI_T_pvar_readreset(session, ops, &value));
    CHECK(value == NPUTS, "readreset gave %llu, expected %d", value, NPUTS);
    CHECK(read_handle(session, ops) == 0, "rma_ops after readreset: %llu",
          read_handle(session, ops));
    value = 100;
    MPI_CHK(MPI_T_pvar_write(session, ops, &value));
    lock_epoch(win, target);
    CHECK(read_handle(session, ops) == 100 + NPUTS, "rma_ops after write 100: %llu",
          read_handle(session, ops));
    MPI_CHK(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES));
    CHECK(read_handle(session, ops) == 0 && read_handle(session, opened) == 0,
          "after reset of all handles");

    /* deferred epochs and replays: rank 1 holds its own lock while rank 0 locks it twice */
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    int token = 0, data = 42, got = 0;
    if (me == 1) {
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MPI_CHK(MPI_Get(&got, 1, MPI_INT, 1, 0, 1, MPI_INT, win));
        MPI_CHK(MPI_Win_flush(1, win));  /* the lock is held */
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_T_pvar_reset(session, MPI_T_PVAR_ALL_HANDLES));
    if (me == 0) {
        MPI_Request requests[2];
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MPI_CHK(MPI_Put(&data, 1, MPI_INT, 1, 0, 1, MPI_INT, win)); /* lock not granted */
        MPI_CHK(MPIX_Win_iunlock(1, win, &requests[0]));
        MPI_CHK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win)); /* behind the first: deferred */
        MPI_CHK(MPI_Put(&data, 1, MPI_INT, 1, 1, 1, MPI_INT, win));
        MPI_CHK(MPIX_Win_iunlock(1, win, &requests[1]));
        CHECK(read_handle(session, deferred) == 1, "epochs_deferred %llu, expected 1",
              read_handle(session, deferred));
        MPI_CHK(MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD));
        MPI_CHK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
        CHECK(read_handle(session, replayed) == 2, "rma_ops_replayed %llu, expected 2",
              read_handle(session, replayed));
        CHECK(read_handle(session, grants) == 2, "lock_grants %llu, expected 2",
              read_handle(session, grants));
        CHECK(read_handle(session, completed) == 2, "epochs_completed %llu, expected 2",
              read_handle(session, completed));
    } else if (me == 1) {
        MPI_CHK(MPI_Recv(&token, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_CHK(MPI_Win_unlock(1, win));
        CHECK(read_handle(session, grants) == 0, "lock_grants %llu, expected 0",
              read_handle(session, grants));
    }
    MPI_CHK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHK(MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES));

    /* errors */
    rc = MPI_T_pvar_read(other, ops, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "read in another session = %d", rc);
    rc = MPI_T_pvar_read(MPI_T_PVAR_SESSION_NULL, ops, &value);
    CHECK(rc == MPI_T_ERR_INVALID_SESSION, "read in no session = %d", rc);
    rc = MPI_T_pvar_read(session, MPI_T_PVAR_HANDLE_NULL, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "read of the null handle = %d", rc);
    rc = MPI_T_pvar_read(session, MPI_T_PVAR_ALL_HANDLES, &value);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "read of all handles = %d", rc);
    rc = MPI_T_pvar_start(MPI_T_PVAR_SESSION_NULL, MPI_T_PVAR_ALL_HANDLES);
    CHECK(rc == MPI_T_ERR_INVALID_SESSION, "start all in no session = %d", rc);
    rc = MPI_T_pvar_handle_free(other, &ops);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "free in another session = %d", rc);
    {
        int all = 0, count = 0;
        MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
        MPI_CHK(MPI_T_pvar_get_num(&all));
        rc = MPI_T_pvar_handle_alloc(session, all, NULL, &h, &count);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "handle_alloc(num) = %d", rc);
        rc = MPI_T_pvar_handle_alloc(session, -1, NULL, &h, &count);
        CHECK(rc == MPI_T_ERR_INVALID_INDEX, "handle_alloc(-1) = %d", rc);
        rc = MPI_T_pvar_handle_alloc(MPI_T_PVAR_SESSION_NULL, all - 1, NULL, &h, &count);
        CHECK(rc == MPI_T_ERR_INVALID_SESSION, "handle_alloc(no session) = %d", rc);
    }
    {   /* a continuous read-only variable: read, never started, stopped, reset or written */
        int index = -1, count = 0;
        MPI_T_pvar_handle level = MPI_T_PVAR_HANDLE_NULL;
        unsigned long long direct = 0;
        MPI_CHK(MPI_T_pvar_get_index("nbrma_helpers", MPI_T_PVAR_CLASS_LEVEL, &index));
        MPI_CHK(MPI_T_pvar_handle_alloc(session, index, NULL, &level, &count));
        MPI_CHK(nbrma_get_counter("helpers", &direct));
        CHECK(read_handle(session, level) == direct, "nbrma_helpers %llu, nbrma_get_counter %llu",
              read_handle(session, level), direct);
        rc = MPI_T_pvar_start(session, level);
        CHECK(rc == MPI_T_ERR_PVAR_NO_STARTSTOP, "start of a continuous variable = %d", rc);
        rc = MPI_T_pvar_stop(session, level);
        CHECK(rc == MPI_T_ERR_PVAR_NO_STARTSTOP, "stop of a continuous variable = %d", rc);
        rc = MPI_T_pvar_reset(session, level);
        CHECK(rc == MPI_T_ERR_PVAR_NO_WRITE, "reset of a read-only variable = %d", rc);
        rc = MPI_T_pvar_write(session, level, &value);
        CHECK(rc == MPI_T_ERR_PVAR_NO_WRITE, "write of a read-only variable = %d", rc);
        rc = MPI_T_pvar_readreset(session, level, &value);
        CHECK(rc == MPI_T_ERR_PVAR_NO_WRITE, "readreset of a read-only variable = %d", rc);
        MPI_CHK(MPI_T_pvar_handle_free(session, &level));
        CHECK(level == MPI_T_PVAR_HANDLE_NULL, "handle_free sets the null handle");
    }

    /* MPICH's pvars (if it has any) in the same session */
    {
        int mpich = 0, count = 0;
        MPI_CHK(mpich_T_pvar_get_num(&mpich));
        if (mpich > 0) {
            MPI_T_pvar_handle h;
            unsigned long long buf[64];
            MPI_CHK(MPI_T_pvar_handle_alloc(session, 0, NULL, &h, &count));
            if (count <= 64)
                MPI_CHK(MPI_T_pvar_read(session, h, buf));
            MPI_CHK(MPI_T_pvar_handle_free(session, &h));
        }
    }

    MPI_CHK(MPI_T_pvar_handle_free(session, &opened));
    MPI_CHK(MPI_T_pvar_session_free(&other)); /* frees in_other */
    MPI_CHK(MPI_T_pvar_session_free(&session));
    CHECK(session == MPI_T_PVAR_SESSION_NULL, "session_free sets the null session");
}

static void check_cvars(void)
{
    int mpich = 0, all = 0, index = -1, rc, count = 0;
    char desc[1024];
    int desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;

    MPI_CHK(MPI_T_cvar_get_index("NBRMA_NOTIFY_MAX", &index));
    rc = MPI_T_cvar_get_info(index, NULL, NULL, &verbosity, &type, &enumtype, desc, &desc_len,
                             &bind, &scope);
    CHECK(rc == MPI_SUCCESS && type == MPI_CHAR && enumtype == MPI_T_ENUM_NULL &&
              bind == MPI_T_BIND_NO_OBJECT && scope == MPI_T_SCOPE_READONLY &&
              verbosity == MPI_T_VERBOSITY_USER_BASIC && strstr(desc, "Default: 65536"),
          "cvar_get_info(NBRMA_NOTIFY_MAX): rc %d scope %d bind %d desc \"%s\"", rc, scope,
          bind, desc);
    check_cvar_string("NBRMA_NOTIFY_MAX", "1024");
    check_cvar_string("NBRMA_TEST_DIE_AT", "");
    check_cvar_string("NBRMA_TRANSPORT",
                      getenv("NBRMA_TRANSPORT") ? getenv("NBRMA_TRANSPORT") : "shm");
    check_cvar_string("NBRMA_PROGRESS", getenv("NBRMA_PROGRESS") ? getenv("NBRMA_PROGRESS")
                                                                : "inline");

    /* errors */
    rc = MPI_T_cvar_get_index("NBRMA_UCX_*", &index);
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "cvar_get_index(NBRMA_UCX_*) = %d", rc);
    rc = MPI_T_cvar_get_index("nbrma_transport", &index); /* a window info key, not a cvar */
    CHECK(rc == MPI_T_ERR_INVALID_NAME, "cvar_get_index(nbrma_transport) = %d", rc);
    MPI_CHK(MPI_T_cvar_get_num(&all));
    rc = MPI_T_cvar_get_info(all, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "cvar_get_info(num) = %d", rc);
    rc = MPI_T_cvar_handle_alloc(all, NULL, &handle, &count);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "cvar_handle_alloc(num) = %d", rc);
    rc = MPI_T_cvar_handle_alloc(-1, NULL, &handle, &count);
    CHECK(rc == MPI_T_ERR_INVALID_INDEX, "cvar_handle_alloc(-1) = %d", rc);
    rc = MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, desc);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "cvar_read(null handle) = %d", rc);
    rc = MPI_T_cvar_write(MPI_T_CVAR_HANDLE_NULL, desc);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "cvar_write(null handle) = %d", rc);
    handle = MPI_T_CVAR_HANDLE_NULL;
    rc = MPI_T_cvar_handle_free(&handle);
    CHECK(rc == MPI_T_ERR_INVALID_HANDLE, "cvar_handle_free(null handle) = %d", rc);

    /* MPICH's cvars through the same calls */
    MPI_CHK(mpich_T_cvar_get_num(&mpich));
    rc = MPI_T_cvar_get_index("MPIR_CVAR_ASYNC_PROGRESS", &index);
    CHECK(rc == MPI_SUCCESS && index < mpich, "MPIR_CVAR_ASYNC_PROGRESS: rc %d index %d", rc,
          index);
    if (rc == MPI_SUCCESS) {
        char name[64];
        int name_len = sizeof name, value = -1;
        rc = MPI_T_cvar_get_info(index, name, &name_len, NULL, &type, NULL, NULL, NULL, NULL,
                                 NULL);
        CHECK(rc == MPI_SUCCESS && strcmp(name, "MPIR_CVAR_ASYNC_PROGRESS") == 0 &&
                  type == MPI_INT, "MPICH cvar info: rc %d name %s", rc, name);
        MPI_CHK(MPI_T_cvar_handle_alloc(index, NULL, &handle, &count));
        rc = MPI_T_cvar_read(handle, &value);
        CHECK(rc == MPI_SUCCESS && count == 1 && (value == 0 || value == 1),
              "MPICH cvar read: rc %d count %d value %d", rc, count, value);
        MPI_CHK(MPI_T_cvar_handle_free(&handle));
    }
}

int main(int argc, char **argv)
{
    int me, np, provided, n;
    resolve_mpich();
    setenv("NBRMA_NOTIFY_MAX", "1024", 1);
    unsetenv("NBRMA_TEST_DIE_AT");
    early_rc[0] = MPI_T_pvar_get_num(&n);
    early_rc[1] = MPI_T_cvar_get_num(&n);
    early_rc[2] = MPI_T_pvar_session_create(&(MPI_T_pvar_session){ 0 });
    early_rc[3] = MPI_T_cvar_handle_alloc(0, NULL, &(MPI_T_cvar_handle){ 0 }, &n);
    const int threads = rt_has_arg(argc, argv, "threads");
    if (MPI_T_init_thread(threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided) !=
        MPI_SUCCESS)
        return 1;
    if (threads)
        rt_init_multiple(&argc, &argv);
    else
        rt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 0; i < 4; i++)
        CHECK(early_rc[i] == MPI_T_ERR_NOT_INITIALIZED, "call %d before MPI_T_init_thread: %d",
              i, early_rc[i]);

    check_order();
    if (me == 0 && rt_has_arg(argc, argv, "list"))
        list_variables();
    check_pvar_info();
    check_cvars();
    check_mpich_cvar_notes();
    check_categories();

    MPI_Win win;
    int *base;
    MPI_CHK(MPI_Win_allocate(sizeof(int) * 16, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &base, &win));
    MPI_CHK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    pthread_t churners[CHURN_THREADS];
    for (int i = 0; threads && i < CHURN_THREADS; i++)
        pthread_create(&churners[i], NULL, churn, NULL);
    check_counting(win, me, np);
    __atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; threads && i < CHURN_THREADS; i++)
        pthread_join(churners[i], NULL);
    MPI_CHK(MPI_Win_free(&win));

    {   /* after the last MPI_T_finalize, a handle that was valid is refused */
        MPI_T_pvar_session session;
        MPI_T_pvar_handle handle;
        unsigned long long value;
        int rc;
        MPI_CHK(MPI_T_pvar_session_create(&session));
        handle = counter_handle(session, "nbrma_rma_ops");
        MPI_CHK(MPI_T_finalize());
        rc = MPI_T_pvar_read(session, handle, &value);
        CHECK(rc == MPI_T_ERR_NOT_INITIALIZED, "read after MPI_T_finalize = %d", rc);
        rc = MPI_T_pvar_get_num(&n);
        CHECK(rc == MPI_T_ERR_NOT_INITIALIZED, "pvar_get_num after MPI_T_finalize = %d", rc);
        rc = MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &value);
        CHECK(rc == MPI_T_ERR_NOT_INITIALIZED, "cvar_read after MPI_T_finalize = %d", rc);
        rc = MPI_T_finalize();
        CHECK(rc == MPI_T_ERR_NOT_INITIALIZED, "a second MPI_T_finalize = %d", rc);
    }
    return rt_finalize();
}
