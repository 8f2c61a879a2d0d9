#!/usr/bin/perl
# make_page.pl — write one man page (roff, MPICH's layout) from its source in maint/man/.
#
# Usage: make_page.pl [--version V] [--errors DIR] [--splice FILE] SOURCE > PAGE
#
# SOURCE is maint/man/<name>.<section>.txt. Its format:
#   - The first line is "NAME <name> - <one-line summary>".
#   - A line in capitals alone (DESCRIPTION, INPUT PARAMETERS, ERRORS, SEE ALSO, ...)
#     starts a section of that name.
#   - SYNOPSIS is copied verbatim (no-fill), as are lines between ``` fences.
#   - INPUT PARAMETERS, OUTPUT PARAMETERS, INPUT/OUTPUT PARAMETERS, ERRORS, OPTIONS:
#     one entry per "term: text" line, continued on following lines indented by spaces.
#   - Elsewhere: paragraphs separated by blank lines; "- " starts a bullet item (its
#     continuation lines indented); "term:: text" starts a tagged paragraph.
#   - Inline: `x` sets x in bold (functions, constants, commands), {x} in italics
#     (arguments, placeholders).
#   - Directives, alone on a line: "@error-classes" lists every MPI error class nbrma
#     returns, read from the one mapping the code has (DIR/src/mpi/errors.cpp, with the
#     causes from DIR/src/common/status.cpp and the MPIX_ names from DIR/include/nbrma.h);
#     "@splice" inserts FILE verbatim (nbrma(7): `nbrma-info --man`, the ENVIRONMENT and
#     WINDOW INFO KEYS sections generated from src/common/settings.cpp).
# An ERRORS entry naming a class the code does not return (per errors.cpp) is an error:
# the page is not written and the exit status is 1.
use strict;
use warnings;

my ($version, $errors_dir, $splice) = ('', undef, undef);
while (@ARGV && $ARGV[0] =~ /^--/) {
    my $option = shift @ARGV;
    if ($option eq '--version') { $version = shift @ARGV; }
    elsif ($option eq '--errors') { $errors_dir = shift @ARGV; }
    elsif ($option eq '--splice') { $splice = shift @ARGV; }
    else { die "make_page.pl: unknown option $option\n"; }
}
die "usage: make_page.pl [--version V] [--errors DIR] [--splice FILE] SOURCE\n" unless @ARGV == 1;
my $source = $ARGV[0];
$source =~ m{([^/]+)\.([1-8])\.txt$} or die "make_page.pl: $source: not <name>.<section>.txt\n";
my ($page, $section) = ($1, $2);

sub slurp {
    my ($file) = @_;
    open(my $fh, '<', $file) or die "make_page.pl: $file: $!\n";
    local $/;
    return <$fh>;
}

# ---- the error classes nbrma returns: class => [causes], from the code's one mapping
my (%classes, @class_order);
if (defined $errors_dir) {
    my %cause;  # Status::x => "text"
    my $status_cpp = slurp("$errors_dir/src/common/status.cpp");
    $cause{$1} = $2 while $status_cpp =~ /case Status::(\w+): return "([^"]*)";/g;
    my %mpix;  # nbrma_err_x => MPIX_ERR_X
    my $header = slurp("$errors_dir/include/nbrma.h");
    $mpix{$2} = $1 while $header =~ /^#define (MPIX_ERR_\w+) (\w+)/mg;
    my $errors_cpp = slurp("$errors_dir/src/mpi/errors.cpp");
    $errors_cpp =~ /int error_class\(Status status\) \{(.*?)\n\}/s
        or die "make_page.pl: no error_class() in $errors_dir/src/mpi/errors.cpp\n";
    my $mapping = $1;
    while ($mapping =~ /case Status::(\w+): return (\w+);/g) {
        my ($status, $class) = ($1, $2);
        $class = $mpix{$class} if exists $mpix{$class};
        next if $class eq 'MPI_SUCCESS';
        push @class_order, $class unless exists $classes{$class};
        push @{$classes{$class}}, $cause{$status} // $status;
    }
    die "make_page.pl: no error classes found in errors.cpp\n" unless @class_order;
}

# ---- the opening of every section-3 ERRORS section (said once, here)
my @errors_intro = (
    ".PP",
    "The call returns \\fBMPI_SUCCESS\\fR or an error code of one of the classes below "
        . "(\\fBMPI_Error_class\\fR), after invoking the window's error handler "
        . "(\\fBMPI_ERRORS_ARE_FATAL\\fR unless changed with \\fBMPI_Win_set_errhandler\\fR), "
        . "or \\fBMPI_COMM_WORLD\\fR's when the window is not valid.",
    "An error found after the call returned (a failed transport, a peer gone) completes "
        . "the call's request, or the epoch's closing request, with that class: "
        . "\\fBMPI_Wait\\fR or \\fBMPI_Test\\fR returns it and sets the status' "
        . "\\fBMPI_ERROR\\fR field (\\fBMPI_ERR_OTHER\\fR for a transport failure).",
    ".PP",
);

# ---- roff output
my @out;
sub escape {
    my ($text) = @_;
    $text =~ s/\\/\\e/g;
    $text =~ s/`([^`]+)`/\\fB$1\\fR/g;
    $text =~ s/\{([^{}]+)\}/\\fI$1\\fR/g;
    return $text;
}
sub line {  # one text line, safe from being read as a request
    my ($text) = @_;
    $text = escape($text);
    $text =~ s/^\s+//;
    $text = "\\&$text" if $text =~ /^[.']/;
    push @out, $text;
}
sub quoted { my ($s) = @_; return $s =~ /\s/ ? "\"$s\"" : $s; }

my @lines = split /\n/, slurp($source), -1;
pop @lines if @lines && $lines[-1] eq '';
my $first = shift @lines;
$first =~ /^NAME (\S+) - (.+)$/ or die "make_page.pl: $source: first line must be 'NAME <name> - <summary>'\n";
die "make_page.pl: $source: NAME $1 differs from the file name\n" if $1 ne $page;
my $summary = $2;
push @out, ".\\\" Generated by maint/man/make_page.pl from maint/man/$page.$section.txt: edit that.";
push @out, ".TH $page $section \"\" \"nbrma $version\" \"nbrma\"";
push @out, ".nh";  # no hyphenation: it would break function and constant names
push @out, ".SH NAME";
push @out, "$page \\- " . escape($summary);

my $list_sections = qr/^(INPUT PARAMETERS|OUTPUT PARAMETERS|INPUT\/OUTPUT PARAMETERS|ERRORS|OPTIONS)$/;
my ($current, $in_fence, $in_list, $paragraph_open) = ('', 0, 0, 0);
my $bad = 0;
for (my $i = 0; $i < @lines; ++$i) {
    my $l = $lines[$i];
    if ($in_fence) {
        if ($l =~ /^```/) { push @out, '.fi', '.RE'; $in_fence = 0; $paragraph_open = 0; next; }
        my $text = $l;
        $text =~ s/\\/\\e/g;
        $text = "\\&$text" if $text =~ /^[.']/;
        push @out, $text;
        next;
    }
    if ($l =~ /^[A-Z][A-Z\/ ]*[A-Z]$/) {  # a section heading
        while ($current eq "SYNOPSIS" && $out[-1] eq "") { pop @out; }
        push @out, ".fi" if $current eq "SYNOPSIS";
        $current = $l;
        push @out, '.SH ' . quoted($l);
        if ($current eq 'SYNOPSIS') { push @out, '.nf'; }
        push @out, @errors_intro if $current eq "ERRORS" && $page =~ /^MPIX_/;
        $paragraph_open = 0;
        next;
    }
    if ($current eq "SYNOPSIS") {  # verbatim, no-fill
        my $t = $l;
        $t =~ s/\\/\\e/g;
        push @out, $t;
        next;
    }
    if ($l =~ /^```/) { push @out, '.PP', '.RS 4', '.nf'; $in_fence = 1; next; }
    if ($l =~ /^\@error-classes\s*$/) {
        die "make_page.pl: $source: \@error-classes needs --errors DIR\n" unless defined $errors_dir;
        for my $class (@class_order) {
            push @out, '.TP', "\\fB$class\\fR", escape(join('; ', @{$classes{$class}}));
        }
        next;
    }
    if ($l =~ /^\@splice\s*$/) {
        die "make_page.pl: $source: \@splice needs --splice FILE\n" unless defined $splice;
        my $text = slurp($splice);
        chomp $text;
        push @out, split /\n/, $text;
        next;
    }
    if ($l eq '') { $paragraph_open = 0; next; }
    if ($current =~ $list_sections && $l =~ /^(\S+(?: [A-Z]+)?):\s+(.*)$/) {
        my ($term, $text) = ($1, $2);
        if ($current eq 'ERRORS' && defined $errors_dir && $term ne 'MPI_SUCCESS'
            && !exists $classes{$term}) {
            print STDERR "make_page.pl: $source: ERRORS names $term, a class nbrma never "
                . "returns (src/mpi/errors.cpp)\n";
            $bad = 1;
        }
        push @out, '.TP', "\\fB" . escape($term) . "\\fR";
        line($text);
        $paragraph_open = 1;
        next;
    }
    if ($l =~ /^- (.*)$/) { push @out, '.IP \(bu 2'; line($1); $paragraph_open = 1; next; }
    if ($l =~ /^(\S.*?):: (.*)$/) { push @out, '.TP', escape($1); line($2); $paragraph_open = 1; next; }
    if ($l =~ /^\s/ && $paragraph_open) { line($l); next; }  # continuation
    push @out, '.PP' unless $paragraph_open;
    line($l);
    $paragraph_open = 1;
}
while ($current eq "SYNOPSIS" && @out && $out[-1] eq "") { pop @out; }
push @out, ".fi" if $current eq "SYNOPSIS";
die "make_page.pl: $source: unclosed ``` fence\n" if $in_fence;
exit 1 if $bad;
print "$_\n" for @out;
