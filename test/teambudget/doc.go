// Package teambudget holds the tests of a team's budget on a real API server
// with the operator running: a team at its --team-budget-cpu and
// --team-budget-memory is refused (Error/BudgetExceeded, nothing installed)
// while another team is not, a team's instance going lets the next in, and
// starts at once never get a team past its budget. It has no code of its own.
package teambudget
