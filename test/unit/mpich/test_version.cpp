// The MPICH series check MPI_Init makes (src/mpich/version.hpp): the version in
// MPI_Get_library_version's text, and whether it is of the series nbrma was built for.
#include <gtest/gtest.h>

#include "mpich/version.hpp"

using nbrma::mpich_mismatch;
using nbrma::mpich_version_of;

namespace {
const char debian_402[] =
    "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n"
    "MPICH ABI:\t14:2:2\nMPICH Device:\tch4:ofi\n";
}  // namespace

TEST(MpichVersion, ReadsTheVersionFromTheLibraryText) {
    EXPECT_EQ(mpich_version_of(debian_402), "4.0.2");
    EXPECT_EQ(mpich_version_of("MPICH Version:    4.1.2b1\n"), "4.1.2b1");
    EXPECT_EQ(mpich_version_of("Open MPI v4.1.4, package: Debian OpenMPI"), "");
    EXPECT_EQ(mpich_version_of(nullptr), "");
}

TEST(MpichVersion, TheSameSeriesIsAccepted) {
    EXPECT_EQ(mpich_mismatch("4.0.2", debian_402), "");
    EXPECT_EQ(mpich_mismatch("4.0.2", "MPICH Version:\t4.0.3\n"), "");
}

TEST(MpichVersion, AnotherSeriesIsRefusedNamingBothVersions) {
    for (const char *running :
         {"MPICH Version:\t4.1.2\n", "MPICH Version:\t3.4.3\n", "MPICH Version:\t5.0.0\n"}) {
        const std::string why = mpich_mismatch("4.0.2", running);
        EXPECT_NE(why.find("runs MPICH " + mpich_version_of(running)), std::string::npos) << why;
        EXPECT_NE(why.find("built for MPICH 4.0.2"), std::string::npos) << why;
        EXPECT_NE(why.find("4.0.x"), std::string::npos) << why;
    }
}

TEST(MpichVersion, AnMpiThatIsNotMpichIsRefused) {
    const std::string why = mpich_mismatch("4.0.2", "Open MPI v4.1.4, package: Debian OpenMPI");
    EXPECT_NE(why.find("not MPICH"), std::string::npos) << why;
    EXPECT_NE(why.find("built for MPICH 4.0.2"), std::string::npos) << why;
}
