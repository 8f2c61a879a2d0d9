#include "mpich/version.hpp"

#include <cstdio>
#include <cstring>

namespace nbrma {

namespace {
// "4.0.2" -> 4, 0; false when it does not start with two numbers.
bool series(const std::string &version, int *major, int *minor) {
    return std::sscanf(version.c_str(), "%d.%d", major, minor) == 2;
}
}  // namespace

std::string mpich_version_of(const char *library_version) {
    static const char label[] = "MPICH Version:";
    const char *at = library_version ? std::strstr(library_version, label) : nullptr;
    if (!at) return "";
    at += sizeof label - 1;
    while (*at == ' ' || *at == '\t') ++at;
    std::size_t length = 0;
    while (at[length] && at[length] != '\n' && at[length] != ' ' && at[length] != '\t') ++length;
    return std::string(at, length);
}

std::string mpich_mismatch(const char *built, const char *running) {
    const std::string version = mpich_version_of(running);
    int built_major = 0, built_minor = 0, major = 0, minor = 0;
    if (!series(built, &built_major, &built_minor)) return "";  // nothing to compare with
    const std::string wanted = "libnbrma was built for MPICH " + std::string(built) +
                               " and runs only on MPICH " + std::to_string(built_major) + "." +
                               std::to_string(built_minor) + ".x";
    if (version.empty())
        return "this process's MPI is not MPICH (MPI_Get_library_version names no MPICH "
               "version), but " +
               wanted;
    if (!series(version, &major, &minor) || major != built_major || minor != built_minor)
        return "this process runs MPICH " + version + ", but " + wanted +
               ": rebuild nbrma against this MPICH";
    return "";
}

}  // namespace nbrma
