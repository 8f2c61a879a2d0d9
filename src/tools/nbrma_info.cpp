// nbrma-info — what this nbrma is and what it can use here, like ompi_info / ucx_info:
// version and build configuration, the MPICH and UCX found at run time, the transports
// usable on this node (shared memory, cross-memory attach, UCX devices, RDMA devices and
// whether their atomics are coherent with the CPU's), and every setting nbrma reads
// (src/common/settings.cpp: the table the library reads them through) with its default,
// its value in this environment, its allowed values and its meaning.
//
// Runs without mpiexec (MPI_Get_library_version needs no MPI_Init). Output: text
// (default), --json, --version, or --man (the ENVIRONMENT and WINDOW INFO KEYS sections of
// nbrma(7)).
#include <infiniband/verbs.h>
#include <mpi.h>
#include <sys/statvfs.h>
#include <ucp/api/ucp.h>
#include <uct/api/uct.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/settings.hpp"

extern char **environ;

namespace {

using nbrma::settings::Scope;
using nbrma::settings::Setting;

// ---------------------------------------------------------------- what is read

struct UcxResource {
    std::string component, md, transport, device, type;
};

struct RdmaDevice {
    std::string name;
    std::string atomics;  // none, hca, global; or the error
};

struct Report {
    std::string mpich_runtime;  // first line of MPI_Get_library_version
    std::string ucx_runtime;
    std::string helper;  // the helper program libnbrma would start, "" if none
    long cores = 0;
    bool shm_usable = false;
    std::string shm_detail;
    bool cma_usable = false;
    std::string cma_detail;
    std::vector<UcxResource> ucx;
    std::string ucx_error;
    std::vector<RdmaDevice> rdma;
};

std::string first_line(const char *text) {
    std::string line = text;
    const auto end = line.find('\n');
    if (end != std::string::npos) line.resize(end);
    for (char &c : line)
        if (c == '\t') c = ' ';
    return line;
}

const char *device_type(uct_device_type_t type) {
    switch (type) {
    case UCT_DEVICE_TYPE_NET: return "network";
    case UCT_DEVICE_TYPE_SHM: return "shared memory";
    case UCT_DEVICE_TYPE_ACC: return "accelerator";
    case UCT_DEVICE_TYPE_SELF: return "loopback";
    default: return "other";
    }
}

// As `ucx_info -d` lists them: every memory domain of every component, and its transports.
void read_ucx(Report *report) {
    uct_component_h *components = nullptr;
    unsigned ncomponents = 0;
    if (uct_query_components(&components, &ncomponents) != UCS_OK) {
        report->ucx_error = "uct_query_components failed";
        return;
    }
    for (unsigned c = 0; c < ncomponents; ++c) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[c], &attr) != UCS_OK) continue;
        std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds.data();
        if (!mds.empty() && uct_component_query(components[c], &attr) != UCS_OK) continue;
        for (const uct_md_resource_desc_t &md_resource : mds) {
            uct_md_config_t *config = nullptr;
            if (uct_md_config_read(components[c], nullptr, nullptr, &config) != UCS_OK) continue;
            uct_md_h md = nullptr;
            const ucs_status_t opened = uct_md_open(components[c], md_resource.md_name, config, &md);
            uct_config_release(config);
            if (opened != UCS_OK) continue;
            uct_tl_resource_desc_t *resources = nullptr;
            unsigned nresources = 0;
            if (uct_md_query_tl_resources(md, &resources, &nresources) == UCS_OK) {
                for (unsigned r = 0; r < nresources; ++r)
                    report->ucx.push_back({attr.name, md_resource.md_name, resources[r].tl_name,
                                           resources[r].dev_name,
                                           device_type(resources[r].dev_type)});
                uct_release_tl_resource_list(resources);
            }
            uct_md_close(md);
        }
    }
    uct_release_component_list(components);
}

// RDMA devices and their atomic capability: IBV_ATOMIC_GLOB means the HCA's atomics are
// atomic with respect to the CPU's, which would let a window with both node-local and
// remote peers keep its local atomics on the CPU; nbrma assumes they are not and routes
// every atomic of such a window through UCX (src/transport/ucx/mixed_transport.hpp).
void read_rdma(Report *report) {
    int ndevices = 0;
    ibv_device **devices = ibv_get_device_list(&ndevices);
    if (!devices) return;
    for (int d = 0; d < ndevices; ++d) {
        RdmaDevice device{ibv_get_device_name(devices[d]), ""};
        ibv_context *context = ibv_open_device(devices[d]);
        ibv_device_attr attr{};
        if (!context) {
            device.atomics = "cannot open the device";
        } else if (ibv_query_device(context, &attr) != 0) {
            device.atomics = "cannot query the device";
        } else {
            device.atomics = attr.atomic_cap == IBV_ATOMIC_GLOB  ? "global"
                             : attr.atomic_cap == IBV_ATOMIC_HCA ? "hca"
                                                                 : "none";
        }
        if (context) ibv_close_device(context);
        report->rdma.push_back(device);
    }
    ibv_free_device_list(devices);
}

void read_node(Report *report) {
    report->cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct statvfs shm {};
    if (statvfs("/dev/shm", &shm) == 0 && access("/dev/shm", W_OK) == 0) {
        report->shm_usable = true;
        char text[96];
        std::snprintf(text, sizeof text, "/dev/shm, %.1f GiB free",
                      static_cast<double>(shm.f_bavail) * shm.f_frsize / (1ull << 30));
        report->shm_detail = text;
    } else {
        report->shm_detail = "/dev/shm is missing or not writable";
    }
    // Cross-memory attach (MPI_Win_create and dynamic windows with node-local peers):
    // Yama scope 0 or 1 (nbrma names its peers with prctl(PR_SET_PTRACER)), and not
    // forbidden by NBRMA_CMA=0.
    int scope = 0;
    if (FILE *file = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "r")) {
        if (std::fscanf(file, "%d", &scope) != 1) scope = 0;
        std::fclose(file);
    }
    const char *cma = nbrma::settings::env(nbrma::settings::Id::cma);
    if (cma && std::strcmp(cma, "0") == 0) {
        report->cma_detail = "forbidden by NBRMA_CMA=0";
    } else if (scope >= 2) {
        report->cma_detail = "kernel.yama.ptrace_scope=" + std::to_string(scope) +
                             " forbids process_vm_readv between the ranks";
    } else {
        report->cma_usable = true;
        report->cma_detail = "kernel.yama.ptrace_scope=" + std::to_string(scope);
    }
}

// The helper program libnbrma starts in interrupt mode: NBRMA_HELPER, else next to the
// installed library (the configured libexecdir).
void read_helper(Report *report) {
    if (const char *path = nbrma::settings::env(nbrma::settings::Id::helper)) {
        report->helper = path;
    } else if (access(NBRMA_LIBEXECDIR "/nbrma-helper", X_OK) == 0) {
        report->helper = NBRMA_LIBEXECDIR "/nbrma-helper";
    }
}

Report read_report() {
    Report report;
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    if (MPI_Get_library_version(version, &length) == MPI_SUCCESS)
        report.mpich_runtime = first_line(version);
    report.ucx_runtime = ucp_get_version_string();
    read_helper(&report);
    read_node(&report);
    read_ucx(&report);
    read_rdma(&report);
    return report;
}

// A setting's value in this environment: the variable's, for an info key the value a
// window created now without the key gets, or the default.
std::string current(const Setting &setting, bool *set) {
    *set = false;
    if (setting.scope == Scope::environment) {
        const std::string name = setting.name;
        if (name.back() == '*') {  // a family: every variable with the prefix
            std::string list;
            const std::string prefix = name.substr(0, name.size() - 1);
            for (char **entry = environ; *entry; ++entry)
                if (std::strncmp(*entry, prefix.c_str(), prefix.size()) == 0)
                    list += (list.empty() ? "" : " ") + std::string(*entry);
            *set = !list.empty();
            return list;
        }
        if (const char *value = nbrma::settings::env(setting.id)) {
            *set = true;
            return value;
        }
        return setting.default_value;
    }
    if (setting.fallback != nbrma::settings::Id::count_) {
        if (const char *value = nbrma::settings::env(setting.fallback)) {
            *set = true;
            return value;
        }
    }
    return setting.default_value;
}

const char *scope_name(Scope scope) {
    return scope == Scope::environment ? "environment" : "window_info";
}

// ---------------------------------------------------------------- text

void print_text(const Report &report) {
    std::printf("nbrma %s\n", PACKAGE_VERSION);
    std::printf("  prefix:          %s\n", NBRMA_PREFIX);
    std::printf("  library:         %s/libnbrma.so\n", NBRMA_LIBDIR);
    std::printf("  helper:          %s\n",
                report.helper.empty() ? "not found in " NBRMA_LIBEXECDIR
                                        " (NBRMA_PROGRESS=interrupt needs it or NBRMA_HELPER)"
                                      : report.helper.c_str());
    std::printf("  compiler:        %s %s\n", NBRMA_CXX, NBRMA_CXXFLAGS);
    std::printf("  built against:   MPICH %s, UCX %d.%d, hwloc %s\n", MPICH_VERSION,
                UCP_API_MAJOR, UCP_API_MINOR, NBRMA_HWLOC_VERSION);
    std::printf("  run time:        %s; UCX %s\n", report.mpich_runtime.c_str(),
                report.ucx_runtime.c_str());
    std::printf("\nThis node (%ld cores)\n", report.cores);
    std::printf("  shm:   %s (%s)\n", report.shm_usable ? "usable" : "NOT usable",
                report.shm_detail.c_str());
    std::printf("  cma:   %s (%s)\n", report.cma_usable ? "usable" : "NOT usable",
                report.cma_detail.c_str());
    std::printf("  ucx:   %zu transport(s)%s%s\n", report.ucx.size(),
                report.ucx_error.empty() ? "" : ": ", report.ucx_error.c_str());
    for (const UcxResource &r : report.ucx)
        std::printf("         %-10s %-14s %-16s %s\n", r.transport.c_str(), r.device.c_str(),
                    r.md.c_str(), r.type.c_str());
    if (report.rdma.empty())
        std::printf("  rdma:  no RDMA devices (libibverbs)\n");
    for (const RdmaDevice &d : report.rdma)
        std::printf("  rdma:  %s, atomics %s%s\n", d.name.c_str(), d.atomics.c_str(),
                    d.atomics == "global" ? " (coherent with the CPU's)"
                                          : " (not coherent with the CPU's: mixed windows "
                                            "run every atomic through UCX)");
    for (Scope scope : {Scope::environment, Scope::window_info}) {
        std::printf("\n%s\n", scope == Scope::environment ? "Environment variables"
                                                          : "Window info keys");
        const Setting *table = nbrma::settings::table();
        for (std::size_t i = 0; i < nbrma::settings::count; ++i) {
            const Setting &s = table[i];
            if (s.scope != scope) continue;
            bool set = false;
            const std::string value = current(s, &set);
            std::printf("  %s = %s%s%s\n", s.name, value.empty() ? "(unset)" : value.c_str(),
                        set ? "" : "  [default]",
                        set && !nbrma::settings::valid(s, value.c_str()) ? "  [NOT VALID]" : "");
            std::printf("      default: %s; values: %s%s\n",
                        *s.default_value ? s.default_value : "(unset)", s.allowed,
                        s.audience == nbrma::settings::Audience::test ? "; for tests" : "");
            if (s.alias) std::printf("      also spelled %s\n", s.alias);
            if (s.fallback != nbrma::settings::Id::count_)
                std::printf("      when not given: %s\n", nbrma::settings::name(s.fallback));
            std::printf("      %s\n", s.meaning);
        }
    }
}

// ---------------------------------------------------------------- JSON

std::string quoted(const std::string &text) {
    std::string out = "\"";
    for (const unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", c);
            out += escape;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

void print_json(const Report &report) {
    std::printf("{\n  \"nbrma\": {\"version\": %s, \"prefix\": %s, \"libdir\": %s, "
                "\"helper\": %s, \"compiler\": %s, \"cxxflags\": %s},\n",
                quoted(PACKAGE_VERSION).c_str(), quoted(NBRMA_PREFIX).c_str(),
                quoted(NBRMA_LIBDIR).c_str(),
                report.helper.empty() ? "null" : quoted(report.helper).c_str(),
                quoted(NBRMA_CXX).c_str(), quoted(NBRMA_CXXFLAGS).c_str());
    std::printf("  \"built_against\": {\"mpich\": %s, \"ucx\": \"%d.%d\", \"hwloc\": %s},\n",
                quoted(MPICH_VERSION).c_str(), UCP_API_MAJOR, UCP_API_MINOR,
                quoted(NBRMA_HWLOC_VERSION).c_str());
    std::printf("  \"runtime\": {\"mpich\": %s, \"ucx\": %s},\n",
                quoted(report.mpich_runtime).c_str(), quoted(report.ucx_runtime).c_str());
    std::printf("  \"node\": {\"cores\": %ld,\n", report.cores);
    std::printf("    \"shm\": {\"usable\": %s, \"detail\": %s},\n",
                report.shm_usable ? "true" : "false", quoted(report.shm_detail).c_str());
    std::printf("    \"cma\": {\"usable\": %s, \"detail\": %s},\n",
                report.cma_usable ? "true" : "false", quoted(report.cma_detail).c_str());
    std::printf("    \"ucx\": [");
    for (std::size_t i = 0; i < report.ucx.size(); ++i) {
        const UcxResource &r = report.ucx[i];
        std::printf("%s\n      {\"transport\": %s, \"device\": %s, \"md\": %s, "
                    "\"component\": %s, \"type\": %s}",
                    i ? "," : "", quoted(r.transport).c_str(), quoted(r.device).c_str(),
                    quoted(r.md).c_str(), quoted(r.component).c_str(), quoted(r.type).c_str());
    }
    std::printf("],\n    \"rdma\": [");
    for (std::size_t i = 0; i < report.rdma.size(); ++i)
        std::printf("%s{\"device\": %s, \"atomics\": %s}", i ? ", " : "",
                    quoted(report.rdma[i].name).c_str(), quoted(report.rdma[i].atomics).c_str());
    std::printf("]},\n  \"settings\": [");
    const Setting *table = nbrma::settings::table();
    for (std::size_t i = 0; i < nbrma::settings::count; ++i) {
        const Setting &s = table[i];
        bool set = false;
        const std::string value = current(s, &set);
        const bool valid = !set || nbrma::settings::valid(s, value.c_str());
        std::printf("%s\n    {\"name\": %s, \"scope\": \"%s\", \"audience\": \"%s\", "
                    "\"default\": %s, \"current\": %s, \"set\": %s, \"valid\": %s, "
                    "\"allowed\": %s, "
                    "\"meaning\": %s, \"alias\": %s, \"fallback\": %s}",
                    i ? "," : "", quoted(s.name).c_str(), scope_name(s.scope),
                    s.audience == nbrma::settings::Audience::user ? "user" : "test",
                    quoted(s.default_value).c_str(), quoted(value).c_str(),
                    set ? "true" : "false", valid ? "true" : "false", quoted(s.allowed).c_str(),
                    quoted(s.meaning).c_str(),
                    s.alias ? quoted(s.alias).c_str() : "null",
                    s.fallback != nbrma::settings::Id::count_
                        ? quoted(nbrma::settings::name(s.fallback)).c_str()
                        : "null");
    }
    std::printf("\n  ]\n}\n");
}

// ---------------------------------------------------------------- roff (nbrma(7))

// Text for a roff line: backslashes doubled, a leading '.' or '\'' protected, '-' as \-.
std::string roff(const std::string &text) {
    std::string out;
    if (!text.empty() && (text[0] == '.' || text[0] == '\'')) out = "\\&";
    for (const char c : text) {
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
    }
    return out;
}

void print_man() {
    for (Scope scope : {Scope::environment, Scope::window_info}) {
        std::printf(scope == Scope::environment ? ".SH ENVIRONMENT\n"
                                                : ".SH \"WINDOW INFO KEYS\"\n");
        std::printf(scope == Scope::environment
                        ? "Read by every process (\\fBnbrma\\-info\\fR shows their values).\n"
                        : "Given to the window creation calls or \\fBMPI_Win_set_info\\fR; "
                          "\\fBMPI_Win_get_info\\fR reports every key with the value in "
                          "effect.\n");
        const Setting *table = nbrma::settings::table();
        for (std::size_t i = 0; i < nbrma::settings::count; ++i) {
            const Setting &s = table[i];
            if (s.scope != scope) continue;
            std::printf(".TP\n.B %s\n%s.\n", roff(s.name).c_str(), roff(s.meaning).c_str());
            std::printf("Values: %s.", roff(s.allowed).c_str());
            if (*s.default_value) std::printf(" Default: \\fB%s\\fR.", roff(s.default_value).c_str());
            if (s.alias) std::printf(" Also spelled \\fB%s\\fR.", roff(s.alias).c_str());
            if (s.fallback != nbrma::settings::Id::count_)
                std::printf(" When not given: \\fB%s\\fR.",
                            roff(nbrma::settings::name(s.fallback)).c_str());
            if (s.audience == nbrma::settings::Audience::test) std::printf(" For tests.");
            std::printf("\n");
        }
    }
}

void usage(FILE *to) {
    std::fprintf(to,
                 "usage: nbrma-info [--json | --man | --version | --help]\n"
                 "  (none)  version, build, run-time MPICH and UCX, this node's transports,\n"
                 "          and every NBRMA_* environment variable and window info key\n"
                 "          nbrma reads, with its default, current value and meaning\n"
                 "  --json  the same as one JSON object\n"
                 "  --man   the ENVIRONMENT and WINDOW INFO KEYS sections of nbrma(7), in roff\n"
                 "  --version  one line: nbrma's version and the MPICH it was built for\n"
                 "  --help  this text\n"
                 "Runs without mpiexec.\n");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc > 2) {
        usage(stderr);
        return 2;
    }
    const std::string option = argc == 2 ? argv[1] : "";
    if (option == "--help" || option == "-h") {
        usage(stdout);
        return 0;
    }
    if (option == "--version" || option == "-V") {
        std::printf("nbrma-info (nbrma) %s, for MPICH %s\n", PACKAGE_VERSION, MPICH_VERSION);
        return 0;
    }
    if (option == "--man") {
        print_man();
        return 0;
    }
    if (!option.empty() && option != "--json") {
        std::fprintf(stderr, "nbrma-info: unknown option '%s'\n", option.c_str());
        usage(stderr);
        return 2;
    }
    const Report report = read_report();
    if (option == "--json")
        print_json(report);
    else
        print_text(report);
    return 0;
}
